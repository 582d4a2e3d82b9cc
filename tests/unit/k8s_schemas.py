"""The offline validator of the Kubernetes rendering (tests/unit/test_k8s_render*.py).

- custom resources: the upstream CRDs' openAPIV3Schema (tests/schemas/k8s, SOURCES.md) with
  jsonschema, plus the API server's strict field validation (a field the structural schema does not
  know is refused, as ``kubectl --validate=strict``, the default since 1.27, refuses it);
- core objects and every pod template inside a job: kubernetes-validate (strict) for Kubernetes 1.32;
- the CNI configuration inside a NetworkAttachmentDefinition (an opaque string to its schema), as
  Multus and the plugins read it;
- Kueue's manager Configuration (a file in a ConfigMap, no CRD): against the Go types of Kueue's
  config API at the release (``apis/config/v1beta2/configuration_types.go``, vendored): field names
  from the json tags, types, required fields and the typed string constants as enums.
"""

import gzip
import ipaddress
import json
import os
import re

import jsonschema
import kubernetes_validate
import yaml

from ansible_collections.linerate.fabric.plugins.module_utils.intent.k8s_base import SUPPORTED
from ansible_collections.linerate.fabric.plugins.module_utils.intent.k8s_network import CNI_VERSION

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCHEMAS = os.path.join(ROOT, "tests", "schemas", "k8s")
K8S_VERSION = SUPPORTED["kubernetes"] + ".0"
CORE_KINDS = {"Namespace", "ConfigMap", "PodTemplate"}
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
KUEUE_TYPES = "config.kueue.x-k8s.io_v1beta2_configuration_types.go.gz"


def _crds():
    out = {}
    for name in sorted(os.listdir(SCHEMAS)):
        if name.endswith(".yaml.gz"):
            with gzip.open(os.path.join(SCHEMAS, name), "rt", encoding="utf-8") as f:
                crd = next(d for d in yaml.safe_load_all(f) if d)
            for v in crd["spec"]["versions"]:
                if v["served"]:
                    out[(f"{crd['spec']['group']}/{v['name']}", crd["spec"]["names"]["kind"])] = v["schema"]["openAPIV3Schema"]
    return out


CRDS = _crds()


def unknown_fields(schema, value, path):
    """Fields a structural schema does not know: the API server prunes them, and its strict field
    validation refuses them."""
    if isinstance(value, dict) and isinstance(schema, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return []
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        out = []
        for key, item in value.items():
            if props is not None and key in props:
                out += unknown_fields(props[key], item, f"{path}.{key}")
            elif isinstance(extra, dict):
                out += unknown_fields(extra, item, f"{path}.{key}")
            elif props is not None and extra is not True and path != "":
                out.append(f"{path}.{key}: unknown field")
        return out
    if isinstance(value, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        return [e for i, item in enumerate(value) for e in unknown_fields(schema["items"], item, f"{path}[{i}]")]
    return []


def pod_templates(obj):
    """(where, PodTemplateSpec) of every pod a job or runtime object makes."""
    spec = obj.get("spec", {})
    if obj["kind"] == "PyTorchJob":
        return [(f"pytorchReplicaSpecs.{k}", v["template"]) for k, v in spec["pytorchReplicaSpecs"].items()]
    if obj["kind"] == "MPIJob":
        return [(f"mpiReplicaSpecs.{k}", v["template"]) for k, v in spec["mpiReplicaSpecs"].items()]
    if obj["kind"] == "ClusterTrainingRuntime":
        return [(f"template.spec.replicatedJobs[{i}]", j["template"]["spec"]["template"]) for i, j in enumerate(spec["template"]["spec"]["replicatedJobs"])]
    return []


def _strict_core(obj, where=""):
    try:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{where}{'.'.join(map(str, e.path))}: {e.message}"]
    return []


def validate(obj):
    """Every problem of one object: [] when the API server of the supported versions would accept it."""
    errors = []
    if not DNS_SUBDOMAIN.fullmatch(obj.get("metadata", {}).get("name", "")):
        errors.append(f"metadata.name: {obj.get('metadata', {}).get('name')!r} is not a DNS subdomain")
    if obj.get("kind") in CORE_KINDS:
        errors += _strict_core(obj)
        if obj.get("kind") == "ConfigMap" and obj["metadata"]["name"] == "kueue-manager-config":
            errors += kueue_config_problems(yaml.safe_load(obj["data"]["controller_manager_config.yaml"]))
        return errors
    schema = CRDS.get((obj.get("apiVersion"), obj.get("kind")))
    if schema is None:
        return [f"{obj.get('apiVersion')} {obj.get('kind')}: no vendored schema"]
    for e in jsonschema.Draft7Validator(schema).iter_errors(obj):
        errors.append(f"{'.'.join(map(str, e.absolute_path))}: {e.message}")
    errors += unknown_fields(schema, obj, "")
    for where, template in pod_templates(obj):  # the core PodTemplateSpec, strictly
        wrapped = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "probe"}, "template": template}
        errors += [f"spec.{where}.template.{e.split('.', 1)[-1]}" for e in _strict_core(wrapped)]
    if obj["kind"] == "NetworkAttachmentDefinition":
        errors += cni_problems(obj)
    return errors


CNI_REQUIRED = {"macvlan": ("master", "mode"), "ipoib": ("master",), "host-device": ("device",), "sriov": (), "ib-sriov": ()}


def cni_problems(nad):
    """The NAD schema has the CNI config as an opaque string: check it as Multus and the plugins read it
    (nv-ipam: type, poolName, poolType ippool | cidrpool; whereabouts: range and exclude in it)."""
    conf = json.loads(nad["spec"]["config"])
    out = []
    if conf.get("name") != nad["metadata"]["name"] or conf.get("cniVersion") != CNI_VERSION:
        out.append(f"config: name/cniVersion {conf.get('name')!r}/{conf.get('cniVersion')!r}")
    if conf.get("type") not in CNI_REQUIRED:
        out.append(f"config.type: {conf.get('type')!r}")
    out += [f"config.{k}: missing" for k in CNI_REQUIRED.get(conf.get("type"), ()) if k not in conf]
    ipam = conf.get("ipam", {})
    if ipam.get("type") == "nv-ipam":
        if set(ipam) - {"type", "poolName", "poolType"} or not ipam.get("poolName") or ipam.get("poolType", "ippool") not in ("ippool", "cidrpool"):
            out.append(f"config.ipam: {ipam!r}")
        return out
    net = ipaddress.ip_network(ipam.get("range"))
    if ipam.get("type") != "whereabouts" or any(ipaddress.ip_network(x).subnet_of(net) is False for x in ipam.get("exclude", [])):
        out.append(f"config.ipam: {ipam!r}")
    return out


# --- Kueue's Configuration, from its Go types -------------------------------------------------------

_STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.M | re.S)
_FIELD = re.compile(r"^\s+(?:(\w+)\s+)?([\w.*\[\]]+)\s+`json:\"([^\"]*)\"`", re.M)
_CONST = re.compile(r"^\s+\w+\s+(\w+)\s+=\s+\"([^\"]*)\"", re.M)
_NUMBER = {"int", "int32", "int64", "float32", "float64"}
_DURATION = re.compile(r"([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+")


def kueue_types():
    """{struct: {json name: (go type, required)}}, {typed string: [its constants]} of the vendored file."""
    with gzip.open(os.path.join(SCHEMAS, KUEUE_TYPES), "rt", encoding="utf-8") as f:
        src = f.read()
    structs = {}
    for sname, body in _STRUCT.findall(src):
        body = "\n".join(line for line in body.splitlines() if not line.strip().startswith("//"))
        structs[sname] = [(field, gotype, tag) for field, gotype, tag in _FIELD.findall(body)]
    enums = {}
    for typ, value in _CONST.findall(src):
        enums.setdefault(typ, []).append(value)
    return structs, enums


def _fields(structs, sname):
    out = {}
    for field, gotype, tag in structs[sname]:
        key, *opts = tag.split(",")
        if key == "" and "inline" in opts:
            base = gotype.split(".")[-1]
            if base in structs:  # an embedded struct of this file: its fields are the parent's
                out.update(_fields(structs, base))
            continue
        out[key] = (gotype, "omitempty" not in opts and not gotype.startswith("*") and field != "")
    return out


def _check(structs, enums, gotype, value, path):
    gotype = gotype.lstrip("*")
    if gotype.startswith("[]"):
        if not isinstance(value, list):
            return [f"{path}: {value!r} is not a list"]
        return [e for i, v in enumerate(value) for e in _check(structs, enums, gotype[2:], v, f"{path}[{i}]")]
    if gotype.startswith("map[string]"):
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not a map"]
        return [e for k, v in value.items() for e in _check(structs, enums, gotype[11:], v, f"{path}.{k}")]
    if gotype in structs:
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not an object"]
        fields = _fields(structs, gotype)
        errors = [f"{path}.{k}: unknown field" for k in value if k not in fields]
        errors += [f"{path}.{k}: required" for k, (_t, req) in fields.items() if req and k not in value]
        return errors + [e for k, v in value.items() if k in fields for e in _check(structs, enums, fields[k][0], v, f"{path}.{k}")]
    if gotype in ("metav1.Duration", "time.Duration"):
        return [] if isinstance(value, str) and _DURATION.fullmatch(value) else [f"{path}: {value!r} is not a duration"]
    if gotype == "bool":
        return [] if isinstance(value, bool) else [f"{path}: {value!r} is not a bool"]
    if gotype in _NUMBER:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return [] if ok and (gotype.startswith("float") or isinstance(value, int)) else [f"{path}: {value!r} is not {gotype}"]
    if gotype in enums:
        return [] if value in enums[gotype] else [f"{path}: {value!r} is not one of {enums[gotype]}"]
    if gotype == "string" or "." not in gotype:
        return [] if isinstance(value, str) else [f"{path}: {value!r} is not a string"]
    return []  # a type of another package (metav1.LabelSelector, LeaderElectionConfiguration): not checked


def kueue_config_problems(config):
    """Every problem of a Kueue manager Configuration against the release's Go types."""
    structs, enums = kueue_types()
    errors = []
    if (config.get("apiVersion"), config.get("kind")) != ("config.kueue.x-k8s.io/v1beta2", "Configuration"):
        errors.append(f"apiVersion/kind: {config.get('apiVersion')!r}/{config.get('kind')!r}")
    body = {k: v for k, v in config.items() if k not in ("apiVersion", "kind")}
    # manageJobsWithoutQueueName has no omitempty but Go's zero value (false) applies when it is absent
    fields = _fields(structs, "Configuration")
    errors += [f"{k}: unknown field" for k in body if k not in fields]
    return errors + [e for k, v in body.items() if k in fields for e in _check(structs, enums, fields[k][0], v, k)]
