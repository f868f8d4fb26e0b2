"""What a paged list keeps of each item, and list pages decoded straight into it.

A page of 500 pods is megabytes of JSON of which triage keeps a few fields. Parsing it whole
and then cutting each item builds (and frees) every field first; msgspec, given the kept
fields as types, reads the page once and builds only what is kept. The types are made from
triage.slim's keep-maps, so there is one definition of what is kept, and a page they do not
fit (a field of an unexpected JSON type, anything msgspec refuses) is parsed whole and cut by
``triage.slim.slim`` instead: the items kept are the same either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast

from scoring.objects import K8sObject, is_terminated
from triage.slim import slim, trim_pod

if TYPE_CHECKING:
    from triage.cluster.resources import Resource

_LIST: Any = list  # subscripted with types made at run time, which mypy cannot see


class Listing(Protocol):
    """What a paged list puts the items it keeps into, a page's at a time: a list, or a
    store's listing, which indexes them as they come (``PodStore.listing``)."""

    def extend(self, items: Iterable[K8sObject], /) -> None: ...

    def __iter__(self) -> Iterator[K8sObject]: ...


def _shape(name: str, keep: dict[str, Any]) -> Any:
    """A TypedDict of the kept keys: a key kept whole is Any; a key cut further is, as
    ``slim`` cuts it, an object or a list of objects (or null)."""
    return _typed_dict(name, {key: Any if inner is True else kept_type(f"{name}_{key}", inner)
                              for key, inner in keep.items()})


def kept_type(name: str, keep: dict[str, Any]) -> Any:
    """The type of a field cut to ``keep``: as ``slim`` cuts it, an object or a list of
    objects (or null)."""
    item = _shape(name, keep)
    return _LIST[item] | item | None


def _typed_dict(name: str, fields: dict[str, Any]) -> Any:
    """A TypedDict made at run time (its fields come from a keep-map)."""
    return cast(Any, TypedDict)(name, fields, total=False)


class ItemShape:
    """An item of a list cut to ``keep`` (a triage.slim keep-map), then passed to ``finish``,
    which returns what to keep of it (None: nothing)."""

    def __init__(self, name: str, keep: dict[str, Any],
                 finish: Callable[[K8sObject], K8sObject | None]) -> None:
        self.keep = keep
        self.finish = finish
        page = _typed_dict(f"{name}List", {"metadata": dict[str, Any] | None,
                                            "items": _LIST[_shape(name, keep)] | None})
        # imported here: the reader imports this module, and a cold read has no use for it
        import msgspec.json

        self._decoder = msgspec.json.Decoder(page)
        self._unfit: type[Exception] = msgspec.DecodeError  # also ValidationError (a subclass)

    def __call__(self, item: K8sObject) -> K8sObject | None:
        """What is kept of one whole item."""
        return self.finish(slim(item, self.keep))

    def cut_page(self, data: bytes) -> tuple[Mapping[str, Any], list[K8sObject]] | None:
        """A list page's metadata and its items cut to ``keep`` (not finished yet), or None
        when the page does not fit the kept fields' types (parse it whole)."""
        try:
            document = self._decoder.decode(data)
        except self._unfit:
            return None
        return document.get("metadata") or {}, document.get("items") or []

    def kept_page(self, resource: Resource, data: bytes,
                  ) -> tuple[Mapping[str, Any], list[K8sObject]] | None:
        """A list page's metadata and what is kept of its items, or None when the page does
        not fit the kept fields' types (parse it whole)."""
        cut = self.cut_page(data)
        if cut is None:
            return None
        metadata, small = cut
        return metadata, [kept for item in with_kind(resource, small)
                          if (kept := self.finish(item)) is not None]


def with_kind(resource: Resource, items: Iterable[K8sObject]) -> list[K8sObject]:
    """List items come without kind/apiVersion; add them, as kubectl does in its output."""
    return [{"apiVersion": resource.api_version, "kind": resource.kind, **item} for item in items]


def finished_pods(keep: Callable[[K8sObject], K8sObject],
                  ) -> Callable[[K8sObject], K8sObject | None]:
    """What is kept of a pod cut to SLIM_POD: ``keep`` of it trimmed (``trim_pod``); of a
    finished pod, nothing."""
    return lambda small: None if is_terminated(small) else keep(trim_pod(small))
