"""How the Cloud Billing Catalog names what the program prices: the services' ids, and the words
each SKU's description begins with or holds, per machine family, GPU, TPU price family, disk
type and Filestore tier. `python -m prices refresh` matches SKUs by them; tests hold each table
to the catalog that keys it (every GPU, family, disk and tier the program can price).
"""

from __future__ import annotations

COMPUTE = "6F81-5844-456A"
TPU = "E000-3F24-B8AA"
NETWORKING = "E505-1604-58F8"
FILESTORE = "D97E-AB26-5D95"
GKE = "CCD8-9BF1-090E"
SERVICES: dict[str, str] = {
    COMPUTE: "compute engine",
    TPU: "tpu",
    NETWORKING: "networking",
    FILESTORE: "filestore",
    GKE: "kubernetes",
}
"""Service id -> a word its display name must hold. Ids from SkyPilot fetch_gcp.py
(GCE_SERVICE_ID, TPU_SERVICE_ID; v5e, v5p and v6e TPUs are Compute Engine SKUs) and
Cyclenerd build/skus.sh; checked against `list_services` at every refresh."""

FAMILY_LABELS = {
    "e2": "E2 Instance",
    "n1": "N1 Predefined Instance",
    "n2": "N2 Instance",
    "n2d": "N2D AMD Instance",
    "c2d": "C2D AMD Instance",
    "c3": "C3 Instance",
    "n4": "N4 Instance",
    "A2": "A2 Instance",
    "A3": "A3 Instance",
    "G2": "G2 Instance",
    "E2": "E2 Instance",
    "C2": "Compute optimized",
}
"""Machine family -> how its vCPU and memory SKUs begin (Cyclenerd mapping.csv)."""
GPU_LABELS = {
    "nvidia-tesla-t4": "Nvidia Tesla T4 GPU",
    "nvidia-tesla-p4": "Nvidia Tesla P4 GPU",
    "nvidia-tesla-v100": "Nvidia Tesla V100 GPU",
    "nvidia-tesla-p100": "Nvidia Tesla P100 GPU",
    "nvidia-tesla-a100": "Nvidia Tesla A100 GPU",
    "nvidia-a100-80gb": "Nvidia Tesla A100 80GB GPU",
    "nvidia-h100-80gb": "Nvidia H100 80GB GPU",
    "nvidia-h100-mega-80gb": "Nvidia H100 80GB Mega GPU",
    "nvidia-l4": "Nvidia L4 GPU",
}
"""GPU type -> how its SKUs begin; Spot ones continue "attached to Spot" (Cyclenerd)."""
TPU_LABELS = {
    "v5litepod": (COMPUTE, "TpuV5e", 1.0),
    "v5p": (COMPUTE, "TpuV5p", 1.0),
    "v6e": (COMPUTE, "TpuV6e", 1.0),
    "v4": (TPU, r"Tpu-v4", 1.0),
    "v2-device": (TPU, r"Tpu-v2(?!.*Pod)", 4.0),
    "v3-device": (TPU, r"Tpu-v3(?!.*Pod)", 4.0),
}
"""TPU price family -> service, description token and chips per billed unit (SkyPilot
fetch_gcp.py: v5e/v5p/v6e per chip-hour in Compute Engine; v2/v3 per 8-core device and v4 per
chip in Cloud TPU). Pod SKUs of v2/v3 bill a unit this program has not confirmed: kept as read."""
DISK_LABELS = {
    "pd-standard": "^Storage PD Capacity in",
    "pd-balanced": "^Balanced PD Capacity in",
    "pd-ssd": "^SSD backed PD Capacity in",
    "hyperdisk-balanced": "^Hyperdisk Balanced Capacity in",
}
FILESTORE_WORDS = {
    "BASIC_HDD": ("basic", "hdd"),
    "BASIC_SSD": ("basic", "ssd"),
    "HIGH_SCALE_SSD": ("high scale",),
    "ENTERPRISE": ("enterprise",),
}
"""Filestore tier -> words its capacity SKU's description holds (descriptions not verified)."""
