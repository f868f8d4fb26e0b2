"""Dynamic Resource Allocation, as kube-scheduler's DynamicResources plugin sees it (pure).

From a cluster's DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices
(``resource.k8s.io/v1``) this package builds a per-node device inventory with the devices other
claims hold, resolves a pod's ``spec.resourceClaims`` to claims or templates, and says per
node how far the pod's requests get: the first failing stage of

    claim-elsewhere → no-gpu-node → device-unfit → too-large → exhausted → fit

for all requests of all the pod's claims together (they must fit on one node, on distinct
devices). A selector that cannot be evaluated leaves the node ``unevaluated``: never a guess.

``model``: devices, claims, requests and per-node fits as data; ``inventory``: the objects
indexed once per snapshot; ``fit``: one node; ``capacity``: shared devices (consumable
capacity); ``binding``: binding conditions; ``taint_rules``: DeviceTaintRules.
"""

from scoring.dra.inventory import (
    ClaimSet,
    Inventory,
)
from scoring.dra.model import (
    CLAIM_ELSEWHERE,
    DEVICE_UNFIT,
    DRA_HOLDERS,
    EXHAUSTED,
    IMPLICIT_EXTENDED_PREFIX,
    NO_DEVICE,
    STAGES,
    TOO_LARGE,
    UNEVALUATED,
    Alternative,
    NodeFit,
    PodClaim,
    Request,
    RequestOutcome,
    SliceDevice,
    allocated_node_names,
    serves_extended,
)

__all__ = [
    "CLAIM_ELSEWHERE",
    "DEVICE_UNFIT",
    "DRA_HOLDERS",
    "EXHAUSTED",
    "IMPLICIT_EXTENDED_PREFIX",
    "NO_DEVICE",
    "STAGES",
    "TOO_LARGE",
    "UNEVALUATED",
    "Alternative",
    "ClaimSet",
    "Inventory",
    "NodeFit",
    "PodClaim",
    "Request",
    "RequestOutcome",
    "SliceDevice",
    "allocated_node_names",
    "serves_extended",
]
