"""The queued resource provider's path before `components/tpu_vms/`: kept for good.

Pulumi pickles a dynamic provider into the state of every resource it manages, by reference to
its module (`dill` stores `components.tpu_vm_provider.QueuedResourceProvider` and the client
factory `components.tpu_vm_provider._default_client`). A state written before the move names
this module, and `pulumi refresh`, `destroy` or a replacement unpickles it from there, so these
names must stay importable here. Code imports `components.tpu_vms.provider`.
"""

from components.tpu_vms.provider import QueuedResourceProvider, _default_client

__all__ = ["QueuedResourceProvider", "_default_client"]
