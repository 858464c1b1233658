# Small extract in the format of transformers/generation/configuration_utils.py
class GenerationConfig:
    """
    Class that holds a configuration for a generation task.

    Arg:
        max_new_tokens (`int`, *optional*):
            The maximum numbers of tokens to generate.
        num_beams (`int`, *optional*, defaults to 1):
            Number of beams for beam search. 1 means no beam search.
    """

    def __init__(self, **kwargs):
        self.max_new_tokens = kwargs.pop("max_new_tokens", None)
        self.num_beams = kwargs.pop("num_beams", 1)
