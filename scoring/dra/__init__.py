"""Dynamic Resource Allocation, as kube-scheduler's DynamicResources plugin sees it (pure).

From a cluster's DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices
(``resource.k8s.io/v1``) this package builds a per-node device inventory with the devices other
claims hold, resolves a pod's ``spec.resourceClaims`` to claims or templates, and says per
node how far the pod's requests get: the first failing stage of

    claim-elsewhere → no-gpu-node → device-unfit → too-large → exhausted → fit

for all requests of all the pod's claims together (they must fit on one node, on distinct
devices). A selector that cannot be evaluated leaves the node ``unevaluated``: never a guess.

``build``: the one step that reads the API objects, into ``rows`` (devices, claims,
classes, a pod's claim references), once per snapshot (``build_devices``: a slice's
devices); ``inventory``: the rows indexed;
``model``: claims resolved, requests and per-node fits as data; ``fit``: one node;
``capacity``: shared devices (consumable capacity); ``binding``: binding conditions;
``taint_rules``: DeviceTaintRules, applied while the rows are built.
"""

from scoring.dra.build import (
    IMPLICIT_EXTENDED_PREFIX,
    dra_rows,
    pod_claim_refs,
    serves_extended,
    slice_devices,
)
from scoring.dra.build_devices import device_row, request_policy
from scoring.dra.inventory import (
    ClaimSet,
    Inventory,
)
from scoring.dra.model import (
    CLAIM_ELSEWHERE,
    DEVICE_UNFIT,
    DRA_HOLDERS,
    EXHAUSTED,
    NO_DEVICE,
    STAGES,
    TOO_LARGE,
    UNEVALUATED,
    NodeFit,
    PodClaim,
    RequestOutcome,
    allocated_node_names,
    products,
)
from scoring.dra.rows import (
    AllocationResult,
    Alternative,
    ClaimRow,
    DeviceClassRow,
    DraRows,
    PodClaimRefs,
    Request,
    SliceDevice,
    SliceRow,
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
    "AllocationResult",
    "Alternative",
    "ClaimRow",
    "ClaimSet",
    "DeviceClassRow",
    "DraRows",
    "Inventory",
    "NodeFit",
    "PodClaim",
    "PodClaimRefs",
    "Request",
    "RequestOutcome",
    "SliceDevice",
    "SliceRow",
    "allocated_node_names",
    "device_row",
    "dra_rows",
    "pod_claim_refs",
    "products",
    "request_policy",
    "serves_extended",
    "slice_devices",
]
