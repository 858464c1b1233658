"""Profile traces: read Kineto / PyTorch-profiler chrome traces and Nsight Systems SQLite exports as streams into
compact per-rank columns (`store`), split them into steady-state steps (`steps`) and account for where each step's
time went (`account`), per rank and stream, with stragglers across ranks and a diff of two traces (`compare`).

Readers and the account are I/O at the edge and pure arithmetic after it; they import nothing of ours above
`orchestrator.knowledge`. The typed result (`model.TraceReport`) is the evidence the analysis rules read.
"""
