"""The protocol catalogue one run decodes with: the generated APIs, with the user's specs laid over them.

A `Catalog` is a value. The options carry it, and the header parser, the request detector, the body decoder, the
filter language and the views are handed it, so two dissectors with different `--spec-dir`s live side by side in
one process. What is derived from its tables (decoder plans, the filter's field tree, the trial decoders of orphan
responses) is kept on the catalogue itself (`derived`), so a cache can never outlive the tables it was made from.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

from kdissect.schema import generated
from kdissect.schema.generated import ApiKey
from kdissect.schema.model import Api, all_versions, union

T = TypeVar("T")


class Catalog:
    """The APIs one run knows, by key, and the lookups the core makes per frame."""

    __slots__ = ("apis", "names", "user", "max_version", "top_version", "_flexible_from", "_derived")

    def __init__(self, user: Sequence[Api] = ()) -> None:
        """The built-in APIs with `user`'s over them: a key of its own adds an API; a built-in key gets the user's
        definitions first, so they win the versions they cover (the union rule of the generator)."""
        apis = dict(generated.APIS)
        for api in user:
            base = apis.get(api.key)
            if base is not None:
                requests, responses = union(api.requests + base.requests), union(api.responses + base.responses)
                api = Api(api.key, api.name, requests, responses, all_versions(requests))
            apis[api.key] = api
        ordered = dict(sorted(apis.items()))
        self.user = tuple(user)
        self.apis: Mapping[int, Api] = MappingProxyType(ordered)
        self.names: Mapping[int, str] = MappingProxyType({key: api.name for key, api in ordered.items()})
        versions = [-1] * (max(ordered) + 1)
        for key, api in ordered.items():
            versions[key] = api.max_version
        self.max_version: tuple[int, ...] = tuple(versions)
        """The newest version of each API key, indexed by key (-1 where no API has it): what request detection checks
        a header against."""
        self.top_version = max(versions)
        self._flexible_from: Mapping[int, int] = MappingProxyType(
            {key: min(m.flexible.lo for m in a.requests if m.flexible) for key, a in ordered.items() if any(m.flexible for m in a.requests)}
        )
        """First flexible request version of each API key; flexibleVersions is always open-ended ("N+"), so a version
        newer than the tables still counts as flexible. Keys that are never flexible are absent."""
        self._derived: dict[Hashable, Any] = {}

    def api(self, key: int) -> Api | None:
        return self.apis.get(key)

    def name(self, key: int) -> str:
        """The API's name, or "api N" for a key no spec defines."""
        name = self.names.get(key)
        return name if name is not None else f"api {key}"

    def known_request(self, key: int, version: int) -> bool:
        """Whether a request header's key and version are ones some spec defines (versions up to the newest)."""
        return 0 <= key < len(self.max_version) and 0 <= version <= self.max_version[key]

    def is_flexible(self, api_key: int, api_version: int) -> bool:
        """Whether this request/response version uses compact encodings and tagged fields."""
        first = self._flexible_from.get(api_key)
        return first is not None and api_version >= first

    def request_header_version(self, api_key: int, api_version: int) -> int:
        """v2 for flexible requests, else v1; ControlledShutdown v0 alone used v0 (no client id)."""
        if self.is_flexible(api_key, api_version):
            return 2
        return 0 if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0 else 1

    def response_header_version(self, api_key: int, api_version: int) -> int:
        """v1 for flexible responses, else v0; ApiVersions always answers with v0, so that a client can read the
        response whatever version it asked for."""
        if api_key == ApiKey.API_VERSIONS:
            return 0
        return 1 if self.is_flexible(api_key, api_version) else 0

    def derived(self, what: Hashable, make: Callable[[Catalog], T]) -> T:
        """What `make` builds from these tables, built once per catalogue and kept with it."""
        try:
            return self._derived[what]
        except KeyError:
            value = self._derived[what] = make(self)
            return value


BUILTIN = Catalog()
"""The generated tables alone: what a run without --spec-dir decodes with."""


def catalog_with(user: Sequence[Api]) -> Catalog:
    """The built-in tables with `user`'s APIs over them (the built-in catalogue itself when there are none)."""
    return Catalog(user) if user else BUILTIN
