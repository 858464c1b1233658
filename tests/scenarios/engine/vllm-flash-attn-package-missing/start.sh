#!/bin/bash
export CUDA_VISIBLE_DEVICES=0
nohup python -m vllm.entrypoints.openai.api_server \
    --model meta-llama/Meta-Llama-3-8B-Instruct \
    --gpu-memory-utilization 0.9 \
    --port 8000 > /srv/llm/vllm.log 2>&1 &
