# Small extract in the format of vllm/config/scheduler.py
class SchedulerConfig:
    max_num_seqs: int = None
    """Maximum number of sequences to be processed in a single iteration."""
