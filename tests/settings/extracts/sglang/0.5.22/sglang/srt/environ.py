# Small extract in the format of sglang/srt/environ.py
class Envs:
    # Deterministic inference
    SGLANG_ENABLE_DETERMINISTIC_INFERENCE = EnvBool(False)
    SGLANG_DETERMINISTIC_NCCL_NCHANNELS = EnvInt(8)
