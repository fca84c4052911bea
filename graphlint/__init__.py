"""graphlint: find where PyTorch graph mode breaks on Ascend NPUs, before it costs a week."""

__version__ = "0.1.0"
