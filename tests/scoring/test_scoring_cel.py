"""CEL device selectors with Kubernetes' quantity and semver libraries, on recorded devices."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scoring.cel.error import SelectorError
from scoring.cel.library import Quantity, Semver
from scoring.cel.selector import compile_selector, device_variable
from scoring.dra import device_row, slice_devices
from tests.paths import FIXTURES

DRA = FIXTURES / "scenarios" / "dra-basics" / "dra.json"


def _slice(name_prefix: str) -> dict[str, Any]:
    items = json.loads(DRA.read_text())["items"]
    return next(i for i in items if i["kind"] == "ResourceSlice"
                and i["metadata"]["name"].startswith(name_prefix))


@pytest.fixture(scope="module")
def a100() -> Any:
    resource_slice = _slice("dra-a100-1")
    return device_variable(slice_devices(resource_slice)[1])


@pytest.fixture(scope="module")
def l4() -> Any:
    resource_slice = _slice("dra-l4-1")
    return device_variable(slice_devices(resource_slice)[0])


def _holds(expression: str, device: Any) -> bool:
    return compile_selector(expression).matches(device)


@pytest.mark.parametrize(("expression", "on_a100", "on_l4"), [
    ('device.driver == "gpu.nvidia.com"', True, True),
    ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0', True, False),
    ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("24Gi")) == 0', False, True),
    ('device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("40Gi"))', True, False),
    ('device.capacity["gpu.nvidia.com"].memory.isLessThan(quantity("25769803776"))', False,
     False),
    ('device.capacity["gpu.nvidia.com"].memory == quantity("81920Mi")', True, False),
    ('device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA A100")', True, False),
    ('device.attributes["gpu.nvidia.com"].index == 1', True, False),
    ('device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.0.0"))',
     False, True),
    ('device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("8.9.0")) >= 0',
     False, True),
    ('device.attributes["gpu.nvidia.com"].driverVersion.isLessThan(semver("560.0.0"))', True,
     True),
    ('device.attributes["gpu.nvidia.com"].cudaComputeCapability.major() == 8 && '
     'device.attributes["gpu.nvidia.com"].cudaComputeCapability.minor() == 0', True, False),
    ('device.attributes["gpu.nvidia.com"].driverVersion.patch() == 7', True, True),
    ('has(device.attributes["gpu.nvidia.com"].productName)', True, True),
    ('has(device.attributes["gpu.nvidia.com"].mig)', False, False),
    ('"gpu.nvidia.com" in device.attributes', True, True),
    ('device.attributes["gpu.nvidia.com"].exists(name, name == "uuid")', True, True),
])
def test_selectors_on_recorded_devices(expression: str, on_a100: bool, on_l4: bool,
                                       a100: Any, l4: Any) -> None:
    # A100-SXM4-80GB: memory 80Gi, compute capability 8.0.0; L4: 24Gi, 8.9.0 (dra.json).
    assert _holds(expression, a100) is on_a100
    assert _holds(expression, l4) is on_l4


@pytest.mark.parametrize(("expression", "expected"), [
    ('quantity("1.5").isInteger()', False),
    ('quantity("2k").isInteger() && quantity("2k").asInteger() == 2000', True),
    ('quantity("500m").asApproximateFloat() == 0.5', True),
    ('quantity("-3").sign() == -1 && quantity("0").sign() == 0', True),
    ('quantity("1Gi").add(quantity("1Gi")) == quantity("2Gi")', True),
    ('quantity("1Gi").add(1) == quantity("1073741825")', True),
    ('quantity("1Gi").sub(quantity("512Mi")) == quantity("512Mi")', True),
    ('isQuantity("80Gi") && !isQuantity("eighty")', True),
    ('semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))', True),
    ('semver("1.0.0-alpha.2").isGreaterThan(semver("1.0.0-alpha.10"))', False),
    ('semver("1.2.3+build.5") == semver("1.2.3")', True),
    ('semver("v1.2", true) == semver("1.2.0")', True),
    ('isSemver("1.2.3") && !isSemver("v1.2.3") && isSemver("v1.2.3", true)', True),
    ('!isSemver("1.02.3") && isSemver("1.02.3", true)', True),
])
def test_kubernetes_extensions(expression: str, expected: bool, a100: Any) -> None:
    assert _holds(expression, a100) is expected


@pytest.mark.parametrize(("expression", "reason"), [
    ("device.driver ==", "does not parse"),
    ('device.attributes["gpu.nvidia.com"].mig == 1', "no such member"),
    ('device.capacity["gpu.nvidia.com"].memory.compareTo(3) > 0', "needs two quantities"),
    ('quantity("eighty").isInteger()', "not a quantity"),
    ('semver("v1").major() == 1', "invalid semver"),
    ('cidr("10.0.0.0/8").containsIP(ip("10.1.2.3"))', "undeclared reference"),
    ('quantity("1.5").asInteger() == 1', "not an int64"),
    ("1 + 1", "not a bool"),
])
def test_unevaluable_expressions_raise_with_the_reason(expression: str, reason: str,
                                                       a100: Any) -> None:
    with pytest.raises(SelectorError) as caught:
        compile_selector(expression).matches(a100)
    assert reason in str(caught.value)
    assert "activation" not in str(caught.value)  # the library's whole context is cut off


def test_qualified_names_and_defaults() -> None:
    device = device_variable(device_row({
        "name": "d0",
        "attributes": {"model": {"string": "X1"}, "pci.example.org/slot": {"int": 3},
                       "fw": {"version": "not-a-semver"}, "ok": {"bool": True}},
        "capacity": {"memory": {"value": "16Gi"}, "broken": {"value": "lots"}},
    }, "gpu.example.com"))
    assert _holds('device.attributes["gpu.example.com"].model == "X1"', device)
    assert _holds('device.attributes["pci.example.org"].slot == 3', device)
    # An unparsable version is kept as its text; a broken quantity is simply absent.
    assert _holds('device.attributes["gpu.example.com"].fw == "not-a-semver"', device)
    assert _holds('device.attributes["gpu.example.com"].ok', device)
    assert _holds('!has(device.capacity["gpu.example.com"].broken)', device)
    assert _holds("!device.allowMultipleAllocations", device)


def test_value_types_order_by_value() -> None:
    assert Quantity("1Gi") == Quantity("1024Mi")
    assert Quantity("1k") < Quantity("1Ki")
    assert Semver("1.0.0-alpha") < Semver("1.0.0-alpha.1") < Semver("1.0.0-beta")
    assert Semver("1.0.0-2") < Semver("1.0.0-10") < Semver("1.0.0-a")
    with pytest.raises(ValueError):
        Semver("1.0.0-01")


def _a100_devices() -> list[Any]:
    resource_slice = _slice("dra-a100-1")
    return [device_variable(d) for d in slice_devices(resource_slice)]


def test_results_are_shared_between_devices_alike_in_what_was_read() -> None:
    selector = compile_selector(
        'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0')
    assert [selector.matches(d) for d in _a100_devices()] == [True] * 4
    # Four devices, one evaluation: they differ only in keys the expression never read.
    [(paths, results)] = selector._shared.items()
    assert paths == (("capacity",), ("capacity", "gpu.nvidia.com"),
                     ("capacity", "gpu.nvidia.com", "memory"))
    assert list(results.values()) == [True]


def test_a_read_that_differs_is_evaluated_again() -> None:
    selector = compile_selector(
        'device.attributes["gpu.nvidia.com"].uuid.startsWith("GPU-325a")')
    assert [selector.matches(d) for d in _a100_devices()] == [True, False, False, False]
    assert len(next(iter(selector._shared.values()))) == 4


def test_a_whole_map_read_is_not_shared() -> None:
    selector = compile_selector(
        'device.attributes["gpu.nvidia.com"].exists(k, k == "uuid")')
    assert [selector.matches(d) for d in _a100_devices()] == [True] * 4
    assert selector._shared == {}
    errors = compile_selector('device.attributes["gpu.nvidia.com"].mig == 1')
    for device in _a100_devices():  # a shared error is raised for every device alike
        with pytest.raises(SelectorError, match="no such member"):
            errors.matches(device)
