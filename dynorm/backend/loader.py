"""botocore's data loader, without listing every service on the way to one service's model.

botocore's ``Loader.load_service_model`` first checks that the service is among
``list_available_services``, which walks every service folder of every search path (about 430
folders, each listed and probed for the model file): two walks per client (the service model and
its endpoint rule set), measured at 45 M instructions and ≈ 20 ms of CPU, user and system, of a
~250 ms cold start, for an answer that only names a service in an error. botocore itself proposes
to drop the walk (boto/botocore pull request 3687). :class:`ServiceLoader` answers that check for
the one service asked, by the same rule the walk applies to each folder, with the loader's public
``list_api_versions`` (which ``load_service_model`` calls next anyway, and caches). Every other
answer is botocore's own: an unknown service still raises ``UnknownServiceError`` naming all
known services, and ``Session.get_available_services`` still lists them all.

The same loader reads botocore's JSON data files into plain dicts (:class:`ModelFileLoader`, its
``FILE_LOADER_CLASS``) instead of botocore's ``json.loads(..., object_pairs_hook=OrderedDict)``:
every client reads ``endpoints.json`` (1.25 MB) and the service model (0.53 MB), which take 17 ms
and 2.8 ms to parse into OrderedDicts and 5.8 ms and 1.4 ms into dicts. Same parser (the standard
library's: orjson would save 2 ms more but reads an integer beyond 64 bits as a float), same
values; Python's dicts keep the file's key order, as the OrderedDicts did. botocore's maintainers
note that plain dicts "work at a functional level" (boto/botocore pull request 2857, declined
only because it changed ``botocore.compat``'s public names).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from typing import Any

from botocore.exceptions import DataNotFoundError
from botocore.loaders import JSONFileLoader, Loader, create_loader

__all__ = ["ModelFileLoader", "ServiceLoader", "service_loader"]


def _open_gzip(path: str, mode: str) -> Any:
    import gzip

    return gzip.open(path, mode)


# the logger botocore's JSONFileLoader names each file it loads on (to see which AWS_DATA_PATH file won)
_log = logging.getLogger("botocore.loaders")

# botocore's file names of a data file: ``name.json``, else ``name.json.gz``, in that order
_EXTENSIONS: tuple[tuple[str, Any], ...] = ((".json", open), (".json.gz", _open_gzip))


class ModelFileLoader(JSONFileLoader):
    """botocore's ``JSONFileLoader`` building plain dicts instead of OrderedDicts.

    :class:`ServiceLoader`'s ``FILE_LOADER_CLASS``. Same files, same parser (the standard
    library's), same values in the same order of keys, same answer for a missing file (``None``),
    same debug line on the ``botocore.loaders`` logger.
    """

    def load_file(self, file_path: str) -> Any:
        """Load ``file_path`` + ``.json``, else + ``.json.gz`` (botocore's order of extensions).

        Args:
            file_path: the file's path without the extension.

        Returns:
            the parsed JSON (dicts, lists, str, int, float, bool); ``None`` when neither file
            exists, or each one that does holds ``null``.

        Raises:
            ValueError: the file is not JSON. OSError: it cannot be read.
        """
        for extension, opener in _EXTENSIONS:
            path = file_path + extension
            if os.path.isfile(path):
                with opener(path, "rb") as fp:
                    payload = fp.read().decode("utf-8")
                _log.debug("Loading JSON file: %s", path)  # botocore's line, on its logger
                data = json.loads(payload)
                if data is not None:  # a file holding ``null`` counts as absent, as in botocore
                    return data
        return None


class ServiceLoader(Loader):
    """A botocore ``Loader`` whose ``load_service_model`` does not list every service first.

    Install it as a session's ``data_loader`` component (``Session.register_component``), as
    :func:`service_loader` builds it. Thread-safe: the service being loaded is held per thread.
    Its files are read by :class:`ModelFileLoader` (plain dicts) unless a ``file_loader`` is given.
    """

    FILE_LOADER_CLASS = ModelFileLoader

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loading = threading.local()

    def load_service_model(self, service_name: str, type_name: str, api_version: str | None = None) -> Any:
        """Load a service model as botocore does (its cache, extras and errors), checking only that
        ``service_name`` has a ``type_name`` file in some search path, not listing every service.

        Args:
            service_name: the service (``"dynamodb"``).
            type_name: the model type (``"service-2"``, ``"endpoint-rule-set-1"``, ...).
            api_version: the API version; the latest found when ``None``.

        Returns:
            the loaded data (a dict).

        Raises:
            botocore.exceptions.UnknownServiceError: no search path has the service's ``type_name``.
            botocore.exceptions.DataNotFoundError: the version asked has no such file.
        """
        try:
            self.list_api_versions(service_name, type_name)  # botocore's rule for one folder (cached)
        except DataNotFoundError:
            known = None  # the walk then lists them all, for the error
        else:
            known = service_name
        self._loading.known = known
        try:
            return super().load_service_model(service_name, type_name, api_version)
        finally:
            self._loading.known = None

    def list_available_services(self, type_name: str) -> list[str]:
        """Inside :meth:`load_service_model` of a service found: ``[that service]``; else botocore's
        full, sorted list of the services that have a ``type_name`` file (every search path walked)."""
        known = getattr(self._loading, "known", None)
        if known is not None:
            return [known]
        return list(super().list_available_services(type_name))


def service_loader(session: Any) -> ServiceLoader:
    """Return a :class:`ServiceLoader` with the search paths botocore would give ``session``'s loader.

    Args:
        session: a botocore session (its ``data_path`` setting, ``AWS_DATA_PATH``, adds search paths).

    Returns:
        the loader, to register as the session's ``data_loader`` component. No request.
    """
    paths = create_loader(session.get_config_variable("data_path")).search_paths
    return ServiceLoader(extra_search_paths=list(paths), include_default_search_paths=False)
