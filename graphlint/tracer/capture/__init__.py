"""The capture stage's three modes, one module each.

``audit`` (CPU, the default off-device): traces the target with its inputs, parameters and
buffers on the ``meta`` device, which stands in for the accelerator, and judges the aten graphs
(``hazards``: device copies, syncs, host tensors; ``npu_kernels``: ops that would fall back to
the CPU). ``cuda``: real CUDA-graph capture and replay. ``npu``: torchair reduce-overhead and
npugraph_ex on an Ascend NPU. ``codes`` holds the vocabulary they share with the static rules.
"""
