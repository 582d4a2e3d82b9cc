"""The restore's masking (switch/redact.py): each platform's secrets numbered consistently, an unknown platform
refused."""

import json

import pytest

from ansible_collections.linerate.fabric.plugins.module_utils.switch.redact import Redactor


def test_redactor_numbers_secrets_consistently_and_knows_each_platform():
    r = Redactor("eos")
    assert r.text("snmp-server community commA ro") == "snmp-server community <redacted-1> ro"
    assert r.text("no snmp-server community commA ro") == "no snmp-server community <redacted-1> ro"
    assert r.text("   neighbor 10.0.0.1 password 7 abc") == "   neighbor 10.0.0.1 password 7 <redacted-2>"
    assert r.text("radius-server key 0 plain") == "radius-server key 0 <redacted-3>"
    assert r.text("ntp authentication-key 1 md5 7 ntpk") == "ntp authentication-key 1 md5 7 <redacted-4>"
    assert r.text("snmp-server user u g v3 auth sha ak priv aes pk") == "snmp-server user u g v3 auth sha <redacted-5> priv aes <redacted-6>"
    n = Redactor("nvue")
    assert n.text("nv set system aaa radius server 10.1.1.1 secret 'a b'") == "nv set system aaa radius server 10.1.1.1 secret <redacted-1>"
    assert n.text("nv unset service snmp-server readonly-community c1 access any") == "nv unset service snmp-server readonly-community <redacted-2> access any"
    s = Redactor("sonic")
    assert (
        s.text("sudo sonic-db-cli CONFIG_DB hset 'TACPLUS_SERVER|10.0.0.9' passkey k1")
        == "sudo sonic-db-cli CONFIG_DB hset 'TACPLUS_SERVER|10.0.0.9' passkey <redacted-1>"
    )
    assert s.text("sudo sonic-db-cli CONFIG_DB hdel 'SNMP_COMMUNITY|pub' TYPE") == "sudo sonic-db-cli CONFIG_DB hdel 'SNMP_COMMUNITY|<redacted-2>' TYPE"
    assert json.loads(s.text(json.dumps({"RADIUS": {"global": {"passkey": "k1", "timeout": "5"}}}))) == {
        "RADIUS": {"global": {"passkey": "<redacted-1>", "timeout": "5"}}
    }
    with pytest.raises(ValueError, match="no redaction rules for platform 'junos'"):
        Redactor("junos")
