// The kernel source of plugins/attention_mma compiled for the SIMT emulator (C++ on the CPU).
#include "kernels/lightning_indexer.cu"
