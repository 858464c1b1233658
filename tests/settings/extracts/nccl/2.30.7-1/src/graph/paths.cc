// Small extract in the format of NCCL's src/graph/paths.cc
NCCL_PARAM(IgnoreDisabledP2p, "IGNORE_DISABLED_P2P", 0);
NCCL_PARAM(NvbDisable, "NVB_DISABLE", 0);
  if (ncclTopoUserP2pLevel == -1) NCCLCHECK(ncclGetLevel(&ncclTopoUserP2pLevel, "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL"));
  const char* str = ncclGetEnv("NCCL_PROTO");
