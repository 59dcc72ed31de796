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
"""

from __future__ import annotations

import threading
from typing import Any

from botocore.exceptions import DataNotFoundError
from botocore.loaders import Loader, create_loader

__all__ = ["ServiceLoader", "service_loader"]


class ServiceLoader(Loader):
    """A botocore ``Loader`` whose ``load_service_model`` does not list every service first.

    Install it as a session's ``data_loader`` component (``Session.register_component``), as
    :func:`service_loader` builds it. Thread-safe: the service being loaded is held per thread.
    """

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
