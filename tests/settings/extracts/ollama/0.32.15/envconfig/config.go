// Small extract in the format of ollama's envconfig/config.go
package envconfig

var (
	FlashAttention = BoolWithDefault("OLLAMA_FLASH_ATTENTION")
	NumParallel = Uint("OLLAMA_NUM_PARALLEL", 1)
	KvCacheType = String("OLLAMA_KV_CACHE_TYPE")
)

func AsMap() map[string]EnvVar {
	ret := map[string]EnvVar{
		"OLLAMA_FLASH_ATTENTION":      {"OLLAMA_FLASH_ATTENTION", FlashAttention(false), "Enabled flash attention"},
		"OLLAMA_KV_CACHE_TYPE":        {"OLLAMA_KV_CACHE_TYPE", KvCacheType(), "Quantization type for the K/V cache (default: f16)"},
		"OLLAMA_NUM_PARALLEL":         {"OLLAMA_NUM_PARALLEL", NumParallel(), "Maximum number of parallel requests"},
	}
	return ret
}
