#!/usr/bin/env bash
exec vllm serve mistralai/Mixtral-8x7B-Instruct-v0.1 --tensor-parallel-size 2 --gpu-memory-utilization 0.85 --max-num-seqs 256 --port 8000
