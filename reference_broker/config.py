"""Broker configuration with Pulsar's ``broker.conf`` key names, defaults and dynamic keys.

What this module owns: the table of keys the reference broker understands, the typed parse of
each value, the ``broker.conf`` file syntax, ``key=value`` overrides, and runtime updates of the
dynamic keys.

Key names are Pulsar's ``ServiceConfiguration`` / ``broker.conf`` names, verbatim (Pulsar's
vocabulary exactly), with Pulsar's defaults (Pulsar's ServiceConfiguration). An unknown key or a
bad value raises ``ConfigError`` naming the key, the bad value and what is allowed. Real Pulsar
ignores unknown keys in broker.conf; we refuse them so a typo in a harness setup fails loudly
instead of testing the default. An empty value (``advertisedAddress=``) means "use the default",
as in Pulsar's broker.conf where blank keys are left unset.

Only keys marked dynamic can change at runtime (``update_dynamic``); Pulsar's tests set
allowAutoTopicCreation, allowAutoTopicCreationType and defaultNumPartitions through
``updateDynamicConfiguration`` (Pulsar's BrokerService/AutoTopicCreationOverrideImpl),
maxConcurrentLookupRequest is dynamic (Pulsar's ServerCnx.handlePartitionMetadataRequest), the
PIP-2 keys are not (Pulsar's ServiceConfiguration).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from reference_broker.errors import ConfigError

BROKER_VERSION = "0.1.0-reference"  # what GET /admin/v2/brokers/version answers

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1  # Java int range: ServiceConfiguration fields are ints
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1  # ... and the few long fields


@dataclass(frozen=True)
class ConfigKey:
    """One broker.conf key: its type, default, whether it is dynamic, and its allowed values."""

    name: str
    kind: str  # "bool" | "int" | "long" | "port" | "optional-port" | "enum" | "str" | "optional-str"
    default: Any
    dynamic: bool = False
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    doc: str = ""

    def allowed(self) -> str:
        if self.kind == "bool":
            return "true or false"
        if self.kind == "enum":
            return " or ".join(self.choices)
        if self.kind in ("port", "optional-port"):
            return "a port number 0..65535 (0 = pick a free port)"
        if self.kind in ("int", "long"):
            low, high = (_INT_MIN, _INT_MAX) if self.kind == "int" else (_LONG_MIN, _LONG_MAX)
            return f"an integer {low if self.minimum is None else self.minimum}..{high}"
        return "any text"

    def parse(self, text: str) -> Any:
        """Turn a broker.conf value into its typed value, or raise ConfigError."""
        text = text.strip()
        if text == "":
            return self.default  # an empty value means the default
        if self.kind == "bool":
            lowered = text.lower()
            if lowered in ("true", "false"):
                return lowered == "true"
            raise self._bad(text)
        if self.kind in ("int", "long", "port", "optional-port"):
            try:
                value = int(text, 10)
            except ValueError:
                raise self._bad(text) from None
            try:
                return self.check(value)
            except ConfigError:
                raise self._bad(text) from None  # report the text as written
        if self.kind == "enum":
            if text in self.choices:
                return text
            raise self._bad(text)
        return text

    def check(self, value: Any) -> Any:
        """Validate an already-typed value (used by keyword construction and by parse)."""
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
        elif self.kind == "optional-port" and value is None:
            return value
        elif self.kind in ("int", "long", "port", "optional-port"):
            if isinstance(value, int) and not isinstance(value, bool):
                low, high = {"port": (0, 65535), "optional-port": (0, 65535), "int": (_INT_MIN, _INT_MAX),
                             "long": (_LONG_MIN, _LONG_MAX)}[self.kind]
                if self.minimum is not None:
                    low = max(low, self.minimum)
                if low <= value <= high:
                    return value
        elif self.kind == "enum":
            if value in self.choices:
                return value
        elif self.kind == "optional-str":
            if value is None or isinstance(value, str):
                return value
        elif isinstance(value, str):
            return value
        raise self._bad(value)

    def format(self, value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)

    def _bad(self, value: Any) -> ConfigError:
        return ConfigError(f"Invalid value {value!r} for configuration key {self.name}: expected {self.allowed()}")


_KEYS = (
    ConfigKey("clusterName", "str", "standalone", doc="cluster this broker belongs to (standalone default)"),
    ConfigKey("bindAddress", "str", "127.0.0.1",
              doc="Pulsar's default is 0.0.0.0; the reference broker stays on loopback unless told otherwise"),
    ConfigKey("advertisedAddress", "optional-str", None, doc="host name put in lookup answers"),
    ConfigKey("brokerServicePort", "port", 6650),
    ConfigKey("webServicePort", "port", 8080),
    ConfigKey("metadataStoreUrl", "str", "memory:", doc="memory: or sqlite:PATH (zk: later)"),
    # Pulsar's BrokerService/AutoTopicCreationOverrideImpl
    ConfigKey("allowAutoTopicCreation", "bool", True, dynamic=True),
    ConfigKey("allowAutoTopicCreationType", "enum", "non-partitioned", dynamic=True,
              choices=("non-partitioned", "partitioned")),
    ConfigKey("defaultNumPartitions", "int", 1, dynamic=True,
              doc="no lower bound here: auto-creation itself refuses values <= 0 (Pulsar's PersistentTopicsBase.internalGetPartitionedMetadataAsync)"),
    ConfigKey("maxNumPartitionsPerPartitionedTopic", "int", 0, dynamic=True, doc="0 = unlimited"),
    ConfigKey("maxTopicsPerNamespace", "int", 0, dynamic=True, doc="0 = unlimited"),
    ConfigKey("maxConcurrentLookupRequest", "int", 50000, dynamic=True, minimum=0),
    # ServiceConfiguration: maxMessageSize default 5 MiB
    ConfigKey("maxMessageSize", "int", 5242880, minimum=1),
    # Pulsar's ServiceConfiguration (PIP-2): not dynamic
    ConfigKey("enablePersistentTopics", "bool", True),
    ConfigKey("enableNonPersistentTopics", "bool", True),
    ConfigKey("maxConcurrentNonPersistentMessagePerConnection", "int", 1000, minimum=0),
    ConfigKey("keepAliveIntervalSeconds", "int", 30, minimum=0),
    # Pulsar's keys and defaults (ServiceConfiguration) [I: inferred, not observed]. Only non-persistent
    # topics are collected here (``TopicRegistry.collect_inactive``): they exist only while loaded.
    ConfigKey("brokerDeleteInactiveTopicsEnabled", "bool", True, dynamic=True),
    ConfigKey("brokerDeleteInactiveTopicsFrequencySeconds", "int", 60, minimum=1),
    # With it, unloading an inactive partition deletes its base name's partitioned metadata
    # (NonPersistentTopic#tryToDeletePartitionedMetadata at v4.0.7; server.py).
    ConfigKey("brokerDeleteInactivePartitionedTopicMetadataEnabled", "bool", False),
    # Pulsar's BrokerService/AutoTopicCreationOverrideImpl: system topics may always be auto-created when this is on
    ConfigKey("systemTopicEnabled", "bool", True),
    # PIP-35 cluster (docs/pip35-decisions.md): Pulsar's key and default (4) for the bundles of a new
    # namespace; every broker of one cluster must use the same value.
    ConfigKey("defaultNumberOfNamespaceBundles", "int", 4, minimum=1),
    # Pulsar's key and default (ServiceConfiguration,
    # apache/pulsar@v4.0.7:pulsar-broker-common/src/main/java/org/apache/pulsar/broker/ServiceConfiguration.java);
    # here: how long a broker registration without a heartbeat stays live on a store that has no
    # sessions (sqlite).
    ConfigKey("metadataStoreSessionTimeoutMillis", "int", 30000, minimum=100),
    # PIP-35 batch lookup, OUR key (TENTATIVE): more topics than this in one batch is refused whole.
    ConfigKey("maxBatchLookupTopics", "int", 10000, dynamic=True, minimum=1),
    # Pulsar's keys and defaults (ServiceConfiguration @ v4.0.7), none dynamic there.
    ConfigKey("subscriptionPatternMaxLength", "int", 50, doc="longer topics_pattern values are not evaluated"),
    ConfigKey("enableBrokerSideSubscriptionPatternEvaluation", "bool", True),
    ConfigKey("brokerMaxConnections", "int", 0, doc="0 = unlimited"),
    ConfigKey("brokerMaxConnectionsPerIp", "int", 0, doc="0 = unlimited"),
    ConfigKey("backlogQuotaCheckEnabled", "bool", True),
    ConfigKey("backlogQuotaCheckIntervalInSeconds", "int", 60, minimum=1),
    ConfigKey("backlogQuotaDefaultLimitBytes", "long", -1, doc="< 0 = no limit"),
    ConfigKey("backlogQuotaDefaultLimitSecond", "int", -1, doc="< 0 = no limit"),
    ConfigKey("backlogQuotaDefaultRetentionPolicy", "enum", "producer_request_hold",
              choices=("producer_request_hold", "producer_exception", "consumer_backlog_eviction")),
    ConfigKey("defaultRetentionTimeInMinutes", "int", 0, doc="0 = no retention, -1 = no limit by time"),
    ConfigKey("defaultRetentionSizeInMB", "int", 0, doc="0 = no retention, -1 = no limit by size"),
    ConfigKey("retentionCheckIntervalInSeconds", "int", 120, minimum=1),
    ConfigKey("managedLedgerMaxEntriesPerLedger", "int", 50000, minimum=1,
              doc="a persistent topic's log is freed in segments of this many entries, as Pulsar frees ledgers"),
    # Pulsar's keys and defaults (ServiceConfiguration @ v4.2.4, PIP-434): Netty's write-buffer
    # water marks, and pausing reads while a connection is past the high one. Pulsar pauses only
    # when asked to (default false); the reference broker does by default, so a client that never
    # reads cannot make it buffer without bound.
    ConfigKey("pulsarChannelWriteBufferHighWaterMark", "int", 64 * 1024, minimum=1),
    ConfigKey("pulsarChannelWriteBufferLowWaterMark", "int", 32 * 1024, minimum=0),
    ConfigKey("pulsarChannelPauseReceivingRequestsIfUnwritable", "bool", True),
)

# Security (security.py), Pulsar's keys and defaults (ServiceConfiguration): all static. The
# TLS ports are unset by default, as in Pulsar: no TLS listener.
_SECURITY_KEYS = (
    ConfigKey("authenticationEnabled", "bool", False),
    ConfigKey("authenticationProviders", "str", "", doc="comma-separated; only AuthenticationProviderToken"),
    ConfigKey("authorizationEnabled", "bool", False),
    ConfigKey("superUserRoles", "str", "", doc="comma-separated roles allowed everything"),
    ConfigKey("anonymousUserRole", "optional-str", None),
    ConfigKey("tokenSecretKey", "optional-str", None, doc="data:;base64,..., file:///path, a path or base64"),
    ConfigKey("tokenPublicKey", "optional-str", None, doc="the same forms; DER X.509"),
    ConfigKey("tokenPublicAlg", "str", "RS256"),
    ConfigKey("tokenAuthClaim", "optional-str", None, doc="the role claim; unset = sub"),
    ConfigKey("brokerServicePortTls", "optional-port", None),
    ConfigKey("webServicePortTls", "optional-port", None),
    ConfigKey("tlsCertificateFilePath", "optional-str", None),
    ConfigKey("tlsKeyFilePath", "optional-str", None),
    ConfigKey("tlsTrustCertsFilePath", "optional-str", None),
)
_KEYS += _SECURITY_KEYS
# Values that carry a key: never shown by as_strings (the runtime-configuration answer).
SECRET_KEYS = frozenset({"tokenSecretKey"})

CONFIG_KEYS: dict[str, ConfigKey] = {key.name: key for key in _KEYS}
NON_DYNAMIC_UPDATE = "Can't update non-dynamic configuration"  # BrokersBase, verbatim
DYNAMIC_KEYS: tuple[str, ...] = tuple(key.name for key in _KEYS if key.dynamic)


def _key(name: str) -> ConfigKey:
    try:
        return CONFIG_KEYS[name]
    except KeyError:
        close = difflib.get_close_matches(name, CONFIG_KEYS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConfigError(
            f"Unknown configuration key {name!r}{hint}; known keys: {', '.join(sorted(CONFIG_KEYS))}"
        ) from None


class BrokerConfig:
    """Typed broker configuration; read values as attributes, e.g. ``config.allowAutoTopicCreation``."""

    def __init__(self, **values: Any) -> None:
        self._values: dict[str, Any] = {key.name: key.default for key in _KEYS}
        # Values as they were before any runtime update, so a deleted dynamic value can be restored.
        self._static: dict[str, Any] = {}
        for name, value in values.items():
            self._values[name] = _key(name).check(value)

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(name)

    def get(self, name: str) -> Any:
        try:
            return self._values[name]  # it holds every known key and nothing else
        except KeyError:
            _key(name)  # raises ConfigError naming the unknown key
            raise

    def set(self, name: str, text: str) -> None:
        """Set a key from its broker.conf text (startup time: any key)."""
        self._values[name] = _key(name).parse(text)

    def apply_overrides(self, overrides: Iterable[str]) -> "BrokerConfig":
        """Apply ``["key=value", ...]`` (e.g. the CLI's ``-c`` options); returns self."""
        for item in overrides:
            name, sep, text = item.partition("=")
            if not sep or not name.strip():
                raise ConfigError(f"Invalid configuration override {item!r}: expected key=value")
            self.set(name.strip(), text)
        return self

    # --- dynamic configuration (Pulsar's BrokerService/AutoTopicCreationOverrideImpl; only dynamic keys) --------------------------------------------

    def update_dynamic(self, name: str, text: str) -> None:
        # BrokersBase#persistDynamicConfigurationAsync: an unknown key passes
        # BrokerService#validateDynamicConfiguration (it only runs a known key's validator) and then
        # fails isDynamicConfiguration, so unknown and non-dynamic keys both answer 412 "Can't update
        # non-dynamic configuration", word for word (README, "Spec decisions"). A bad value of a
        # dynamic key: Pulsar's 412 " Invalid dynamic-config value"; we keep its words and add what
        # is allowed (Pulsar refuses only values its validators reject; no row covers this).
        key = CONFIG_KEYS.get(name)
        if key is None or not key.dynamic:
            raise ConfigError(NON_DYNAMIC_UPDATE)
        try:
            value = key.parse(text)
        except ConfigError:
            raise ConfigError(
                f"Invalid dynamic-config value {text!r} for {name}: expected {key.allowed()}"
            ) from None
        self._static.setdefault(name, self._values[name])
        self._values[name] = value
        # BrokerService#updateDefaultNumPartitions and #updateMaxNumPartitionsPerPartitionedTopic
        # (v3.0.2 to v4.2.4): either update lowers defaultNumPartitions to a non-zero maximum below
        # it; a broker.conf holding both keeps them as written.
        if name in ("defaultNumPartitions", "maxNumPartitionsPerPartitionedTopic"):
            maximum = self._values["maxNumPartitionsPerPartitionedTopic"]
            if maximum != 0 and self._values["defaultNumPartitions"] > maximum:
                self._static.setdefault("defaultNumPartitions", self._values["defaultNumPartitions"])
                self._values["defaultNumPartitions"] = maximum

    def reset_dynamic(self, name: str) -> None:
        """Forget a runtime update: back to the broker.conf / default value."""
        key = CONFIG_KEYS.get(name)
        if key is None or not key.dynamic:
            raise ConfigError(
                f"Can't delete non-dynamic configuration {name}; dynamic keys: {', '.join(DYNAMIC_KEYS)}"
            )
        if name in self._static:
            self._values[name] = self._static.pop(name)

    def formatted(self, name: str) -> str:
        return _key(name).format(self._values[name])

    def as_strings(self) -> dict[str, str]:
        """Every key with its current value as broker.conf text (a secret key masked)."""
        return {name: "******" if name in SECRET_KEYS and self._values[name] else self.formatted(name)
                for name in sorted(CONFIG_KEYS)}

    @property
    def advertised_host(self) -> str:
        """Host for lookup URLs: advertisedAddress, else the bind address, else localhost."""
        return self.advertised_for(self.bindAddress)

    def advertised_for(self, bind_address: str) -> str:
        """The host a broker bound to ``bind_address`` advertises: ``advertisedAddress`` when set;
        else the bind address itself, unless it is a wildcard, which no client can connect to:
        then ``localhost``, what PulsarStandaloneStarter @ v4.0.7 advertises when
        advertisedAddress is blank ("config.setAdvertisedAddress("localhost")")."""
        if self.advertisedAddress:
            return self.advertisedAddress
        return bind_address if bind_address not in ("0.0.0.0", "::", "") else "localhost"

    def __repr__(self) -> str:
        changed = {k: v for k, v in self._values.items() if v != CONFIG_KEYS[k].default}
        return f"BrokerConfig({changed!r})"


def parse_conf_text(text: str, *, source: str = "<text>") -> dict[str, str]:
    """Parse broker.conf syntax into ``{key: raw value}``; key names are checked, values are not."""
    entries: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"{source}:{number}: expected key=value, got {raw!r}")
        name = name.strip()
        try:
            _key(name)
        except ConfigError as exc:
            raise ConfigError(f"{source}:{number}: {exc.reason}") from None
        entries[name] = value.strip()
    return entries


def load_conf_file(path: str | Path, *, overrides: Iterable[str] = ()) -> BrokerConfig:
    """Read a broker.conf file, then apply ``key=value`` overrides; raises ConfigError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot read configuration file {path}: {exc.strerror or exc}") from None
    config = BrokerConfig()
    for name, value in parse_conf_text(text, source=str(path)).items():
        try:
            config.set(name, value)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc.reason}") from None
    return config.apply_overrides(overrides)


def build_config(conf_file: str | Path | None = None, overrides: Iterable[str] = ()) -> BrokerConfig:
    """The CLI's entry point: defaults, then the broker.conf file (if any), then ``key=value`` overrides."""
    if conf_file is None:
        return BrokerConfig().apply_overrides(overrides)
    return load_conf_file(conf_file, overrides=overrides)
