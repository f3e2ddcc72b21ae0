"""Hybrid search: keyword and vector results fused into one ranking (`tansaku query`)."""
