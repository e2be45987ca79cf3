"""Admin v2 broker routes: dynamic configuration and version (``/admin/v2/brokers/...``).

What this module owns: the HTTP shape of Pulsar's ``BrokersBase`` endpoints we need. The harness
sets allowAutoTopicCreation, allowAutoTopicCreationType and defaultNumPartitions through
``POST /admin/v2/brokers/configuration/{key}/{value}``, as Pulsar's own tests do (Pulsar's BrokerService/AutoTopicCreationOverrideImpl).

- an update answers 204 (the newest Pulsar answers 200 with no body; both mean success).
- a non-dynamic or unknown key, or a bad value, is 412 (``ConfigError``): a key with Pulsar's
  words exactly, "Can't update non-dynamic configuration"
  (BrokersBase#persistDynamicConfigurationAsync); a value with "Invalid dynamic-config value"
  followed by what is allowed.
- ``/configuration/values`` answers every dynamic key with its effective value; Pulsar answers
  only the runtime updates (see ``BrokerCore.dynamic_config_values``).
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse

from reference_broker.core import BrokerCore

NO_CONTENT = 204


def build_router(core: BrokerCore) -> APIRouter:
    router = APIRouter(prefix="/admin/v2/brokers")

    @router.get("/configuration", summary="Names of the dynamic configuration keys")
    async def dynamic_config_names() -> list[str]:
        return core.dynamic_config_names()

    @router.get("/configuration/values", summary="Every dynamic key with its effective value")
    async def dynamic_config_values() -> dict[str, str]:
        return core.dynamic_config_values()

    @router.get("/configuration/runtime", summary="Every configuration key with its effective value")
    async def runtime_config() -> dict[str, str]:
        return core.runtime_config()

    @router.post("/configuration/{configName}/{configValue}", status_code=NO_CONTENT,
                 summary="Update a dynamic configuration key")
    async def update_dynamic_config(configName: str, configValue: str) -> Response:
        core.update_dynamic_config(configName, configValue)
        return Response(status_code=NO_CONTENT)

    @router.delete("/configuration/{configName}", status_code=NO_CONTENT,
                   summary="Forget a runtime update of a dynamic key")
    async def delete_dynamic_config(configName: str) -> Response:
        if configName in ("runtime", "values"):
            # JAX-RS prefers the literal paths above, which serve GET only: 405, as Pulsar answers.
            raise HTTPException(status_code=405)
        core.delete_dynamic_config(configName)
        return Response(status_code=NO_CONTENT)

    @router.get("/version", response_class=PlainTextResponse, summary="The broker's version string")
    async def version() -> str:
        return core.version

    return router
