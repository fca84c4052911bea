"""The capture stage's three modes, one module each, and the pieces they share.

``audit`` (CPU, the default off-device): ``fake_device`` compiles the target with its inputs,
parameters and buffers on ``meta``, which stands in for the accelerator (``placement`` moves
them, ``patched_tensor_factories`` works around a meta limitation of FakeTensorMode); then
``hazards`` (device copies, syncs, host tensors) and ``npu_kernels`` (ops that would fall back
to the CPU) judge the aten graphs, and ``custom_ops`` the Python kernels of the custom ops in
them (``library_kernels`` keeps those given with ``Library.impl``). ``cuda``: real CUDA-graph capture and replay. ``npu``:
torchair reduce-overhead and npugraph_ex on an Ascend NPU. ``codes`` holds the vocabulary they
share with the static rules; ``outcome`` what a mode hands back to the stage.
"""
