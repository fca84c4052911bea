"""The capture codes: the static rules' GL201–GL203 (one vocabulary for `check` and `trace`)
plus those only the trace can see: GL204 (it needs torch_npu's kernel list) and the replay
fidelity codes GL205–GL207 (they need the values of several calls)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CaptureCode:
    code: str
    slug: str  # the static rule's long name
    kind: str  # the trace finding's ``kind``


HOST_DEVICE_COPY = CaptureCode("GL201", "host-device-copy-in-capture", "host-device-copy")
SYNC = CaptureCode("GL202", "sync-in-capture", "sync")
HOST_TENSOR = CaptureCode("GL203", "host-tensor-in-capture", "host-tensor")
CPU_FALLBACK = CaptureCode("GL204", "cpu-fallback-in-capture", "cpu-fallback")
REPLAY_MISMATCH = CaptureCode("GL205", "replay-mismatch", "replay-mismatch")
STALE_ADDRESS = CaptureCode("GL206", "stale-address", "stale-address")
RECAPTURE_LIMIT = CaptureCode("GL207", "recapture-limit", "recapture-limit")
