"""Whether Application Default Credentials can be found, answered from the local machine alone:
the places `google.auth.default()` looks, in its order, short of its probe of the GCE metadata
server, which off Google Cloud costs seconds of timeouts. Preflight asks this before it builds
the plan or imports a client, so that without credentials it fails in well under a second.

Imports nothing but the standard library: `python -m preflight` reaches it before anything
heavy.
"""

from __future__ import annotations

import os
from pathlib import Path

CREDENTIALS = "GOOGLE_APPLICATION_CREDENTIALS"
CLOUDSDK_CONFIG = "CLOUDSDK_CONFIG"
ADC_FILE = "application_default_credentials.json"
METADATA_HOSTS = ("GCE_METADATA_HOST", "GCE_METADATA_IP")
"""Set where a metadata server stands in for GCE's (google.auth environment_vars)."""
NO_GCE_CHECK = "NO_GCE_CHECK"
PRODUCT_NAME = Path("/sys/class/dmi/id/product_name")
"""A Compute Engine VM's DMI product name begins "Google" (google-auth compute_engine/
_metadata.py detect_gce_residency_linux, which google.auth.default consults too)."""


def gcloud_adc_path() -> Path:
    """Where `gcloud auth application-default login` writes credentials (google-auth
    _cloud_sdk.get_application_default_credentials_path)."""
    config = os.environ.get(CLOUDSDK_CONFIG)
    if config:
        return Path(config) / ADC_FILE
    if os.name == "nt":
        return Path(os.environ.get("APPDATA", "")) / "gcloud" / ADC_FILE
    return Path.home() / ".config" / "gcloud" / ADC_FILE


def _on_google_cloud() -> bool:
    if os.environ.get(NO_GCE_CHECK, "").lower() == "true":
        return False
    if any(os.environ.get(name) for name in METADATA_HOSTS):
        return True
    try:
        return PRODUCT_NAME.read_text().strip().startswith("Google")
    except OSError:
        return False


def missing() -> str | None:
    """Why `google.auth.default()` would find no credentials, or None when it may find some
    (it decides then, with the network)."""
    explicit = os.environ.get(CREDENTIALS)
    if explicit:
        if Path(explicit).is_file():
            return None
        return f"{CREDENTIALS} names {explicit}, which does not exist"
    well_known = gcloud_adc_path()
    if well_known.is_file() or _on_google_cloud():
        return None
    return (
        f"{CREDENTIALS} is not set, there is no {well_known}, and this machine is not a "
        "Google Cloud VM with a metadata server"
    )
