"""The rules of the fabric-wide variables: role switch_fabric (lossless headroom, PFC watchdog),
role verify_fabric (nccl-tests, the NCCL tuning sweep), role k8s_render, Ansible's connection
variables, the playbooks' switches and remediation: one entry of intent/variables.py's RULES per
variable, built with the checks of intent/varcheck.py.

Stdlib only (plus the sibling intent modules).
"""
from ansible_collections.linerate.fabric.plugins.module_utils.intent import cabling
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import LINK_SPEEDS_GBPS, TRUST_MODES
from ansible_collections.linerate.fabric.plugins.module_utils.intent import k8s_jobs, k8s_render
from ansible_collections.linerate.fabric.plugins.module_utils.intent.knobs import batch, one_node, release, share, split_into
from ansible_collections.linerate.fabric.plugins.module_utils.intent.varcheck import (
    ANY_DICT, ANY_LIST, ARGV, boolean, choice, CONFIRM_RANGE, either, ENV_MAP, extra_ports, fmt, GID_INDEX,
    host_address, integer, intent_format, listing, local_path, MAX_READ_REQ, mpi_from, NCCL_OVERRIDES, _NCCL_SIZE,
    NCCL_TESTS, nccl_tune_candidate, nccl_tune_scales, number, shape, _PACKAGE, PACKAGES, path, _PROFILE, text, url, _USER,
    VERIFY_CHECKS, _VERSION)
from ansible_collections.linerate.fabric.plugins.module_utils.intent import nccl_tune
from ansible_collections.linerate.fabric.plugins.module_utils.intent.problems import case_hint
from ansible_collections.linerate.fabric.plugins.module_utils.switch.sonic_buffer_data import PLATFORM_BUFFERS

# Cumulus Linux releases whose NVUE forms the driver knows (docs/switches.md "NVUE forms per release").
NVUE_RELEASE = choice("5.9", "5.10", "5.11", "5.12", "5.13", "5.14", "5.15", "5.16", "5.17")


def _sonic_hwsku(c, key, value) -> bool:
    """Empty, or a SONiC SKU whose pg_profile_lookup.ini linerate vendors (switch/sonic_buffer_data.py)."""
    if value == "" or (isinstance(value, str) and value in PLATFORM_BUFFERS):
        return True
    return c.bad(key, value, "empty (sonic-swss's rows plus switch_sonic_pg_lookup), or a SONiC SKU linerate has "
                             "the buffer defaults of: " + " | ".join(sorted(PLATFORM_BUFFERS))
                 + case_hint(value, PLATFORM_BUFFERS))


FABRIC_RULES = {
    # role switch_fabric (connection values come from Ansible's variables below)
    "switch_fabric_platform": choice(*cabling.SWITCH_PLATFORMS),
    "switch_fabric_host": host_address,
    "switch_fabric_port": integer(1, 65535, " (a TCP port)"),
    "switch_fabric_username": fmt(_USER),
    "switch_fabric_password": text(1024),
    "switch_fabric_enable_secret": text(1024),
    "switch_fabric_private_key_file": text(4096),
    "switch_fabric_known_hosts": text(4096),
    "switch_fabric_ssh_config_file": text(4096),
    "switch_fabric_host_key_checking": boolean,
    "switch_fabric_connect_timeout": integer(1, 300, " seconds"),
    "switch_fabric_command_timeout": integer(1, 1200, " seconds"),
    "switch_fabric_connection": ANY_DICT,
    "switch_fabric_backup": boolean,
    "switch_fabric_backup_dir": local_path(),
    "switch_fabric_backup_keep": integer(1, 100000, " backups kept per switch"),
    "switch_fabric_confirm_timeout": integer(*CONFIRM_RANGE, " seconds"),
    "switch_fabric_post_checks": boolean,
    "switch_fabric_require_ports_up": boolean,
    "switch_fabric_templates_dir": local_path(),
    "switch_fabric_profile": fmt(_PROFILE),
    # Lossless headroom and the PFC watchdog (module_utils/switch/buffers.py: sonic-pfcwd.yang's ranges)
    "switch_fabric_cable_length": fmt((r"[1-9][0-9]{0,3}m", "a cable length in metres, 1m..9999m (SONiC CABLE_LENGTH)")),
    "switch_fabric_sonic_pg_lookup": ANY_DICT,
    # the SONiC SKUs whose pg_profile_lookup.ini linerate vendors (switch/sonic_buffer_data.py)
    "switch_fabric_sonic_hwsku": _sonic_hwsku,
    "switch_sonic_hwsku": _sonic_hwsku,
    # NVUE reference "nv set qos pfc <profile-id> cable-length": 1-100000 m; empty: NVUE's 100 m
    "switch_fabric_nvue_cable_length": fmt((r"(?:[1-9][0-9]{0,4}|100000)m", "a cable length in metres, 1m..100000m "
                                            "(NVUE qos pfc cable-length; empty is NVUE's own 100 m)"), empty=True),
    "switch_fabric_pfcwd_action": choice("drop", "forward", "alert"),
    "switch_fabric_pfcwd_detection_ms": integer(100, 5000, " ms"),
    "switch_fabric_pfcwd_restoration_ms": integer(100, 60000, " ms"),
    "switch_fabric_nvue_release": release(NVUE_RELEASE, "5.10"),
    # the switch's own Cumulus Linux release (inventory), the default of switch_fabric_nvue_release
    "switch_nvue_release": release(NVUE_RELEASE, "5.10"),
    "switch_fabric_mtu": integer(1280, 9216),
    "switch_fabric_link_speed_gbps": choice(*LINK_SPEEDS_GBPS),
    "switch_fabric_set_speed": boolean,
    "switch_fabric_trust": choice(*TRUST_MODES),
    "switch_fabric_no_drop_priority": integer(0, 7),
    "switch_fabric_data_dscp": integer(0, 63),
    "switch_fabric_cnp_dscp": integer(0, 63),
    "switch_fabric_cnp_priority": integer(0, 7),
    "switch_fabric_ecn_enabled": boolean,
    "switch_fabric_ecn_min_threshold_kb": integer(1, 100000),
    "switch_fabric_ecn_max_threshold_kb": integer(1, 100000),
    "switch_fabric_ecn_probability_percent": integer(1, 100),
    "switch_fabric_extra_ports": extra_ports,
    "switch_fabric_counters_phase": choice("before", "after"),
    "switch_fabric_restore_backup": local_path(empty=True),
    "switch_fabric_restore_accept_no_digest": boolean,
    "switch_fabric_restore_allow_deletions": boolean,
    # split in two (issue 36): one flag both accepted a backup without a digest and allowed deletions
    "switch_fabric_restore_force": split_into("it both accepted a backup without a .sha256 digest and allowed "
                                              "a restore to delete settings outside the managed scope",
                                              "switch_fabric_restore_accept_no_digest",
                                              "switch_fabric_restore_allow_deletions"),
    # playbooks/switches.yml, switch_rollback.yml: the plays' serial and max_fail_percentage
    "switch_fabric_serial": batch,
    "switch_fabric_max_fail_percentage": number(0, 100, " percent of a batch's switches that may fail"),
    "switch_fabric_render_dir": local_path(),
    "switch_fabric_eos_profile": ANY_DICT,   # derived from switch_eos_family (module_utils/switch/profiles.py)
    # role verify_fabric
    "verify_fabric_fabric": ANY_DICT,
    "verify_fabric_ib_sm_host": one_node(text(253), "the inventory host of the master subnet manager"),
    "verify_fabric_checks": listing(choice(*VERIFY_CHECKS), min_len=1, what="a list of checks"),
    "verify_fabric_benchmark_checks": listing(choice(*VERIFY_CHECKS)),
    "verify_fabric_active_checks": listing(choice(*VERIFY_CHECKS)),
    "verify_fabric_link_health_mlxlink": boolean,
    "verify_fabric_link_health_min_window_s": integer(0, 3600, " seconds"),
    "verify_fabric_run_benchmarks": boolean,
    "verify_fabric_read_only": boolean,
    "verify_fabric_defer_report": boolean,
    "verify_fabric_mode": text(256),
    "verify_fabric_drift": lambda c, k, v: True,   # the audit's own results, never an operator value
    "verify_fabric_ports": ANY_LIST,
    "verify_fabric_gid_index": either(lambda c, k, v: v is None, integer(0, 255),
                                      allowed="null or a GID index 0..255"),
    "verify_fabric_nccl_gid_index": GID_INDEX,
    "verify_fabric_tclass": either(lambda c, k, v: v is None, integer(0, 255),
                                   allowed="null or a traffic class 0..255"),
    "verify_fabric_sl": either(lambda c, k, v: v is None, integer(0, 15), allowed="null or a service level 0..15"),
    "verify_fabric_nccl_conf_path": path(),
    "verify_fabric_readiness_nccl_packages": PACKAGES,
    "verify_fabric_readiness_min_memlock_kb": integer(-1, 2 ** 40, " KiB; -1 = unlimited"),
    "verify_fabric_readiness_min_shm_bytes": integer(0, 2 ** 50),
    "verify_fabric_readiness_min_max_read_req": choice(*MAX_READ_REQ),
    "verify_fabric_readiness_load_command": ARGV,
    "verify_fabric_readiness_load_timeout": number(1, 3600, " seconds"),
    "verify_fabric_packages": PACKAGES,
    # nccl-tests install (tasks/tools.yml; the plan's own checks: module_utils/host/verify_tools.py)
    "verify_fabric_nccl_tests_method": choice("source", "package", "none"),
    "verify_fabric_nccl_tests_version": release(fmt(_VERSION), "2.19.6"),
    "verify_fabric_nccl_tests_source_url": url(("https", "http", "file"), empty=True),
    "verify_fabric_nccl_tests_source_checksum": fmt((r"sha256:[0-9a-f]{64}", "sha256:<64 hex digits>"), empty=True),
    "verify_fabric_nccl_tests_prefix": path(),
    "verify_fabric_nccl_tests_package": fmt(_PACKAGE),
    "verify_fabric_nccl_tests_mpi_home": path(),
    "verify_fabric_nccl_tests_cuda_home": path(),
    "verify_fabric_nccl_tests_nccl_home": path(),
    "verify_fabric_ib_write_bw_tool": choice("ib_write_bw", "ib_read_bw"),
    "verify_fabric_ib_write_bw_plan": choice("auto", "full", "sampled"),
    "verify_fabric_ib_write_bw_plan_effective": choice("full", "sampled"),
    "verify_fabric_ib_write_bw_sample_rounds": integer(1, 64),
    "verify_fabric_ib_write_bw_retest_phases": integer(0, 10, ": re-test phases of the sampled plan (0: none)"),
    "verify_fabric_ib_write_bw_size": integer(1, 2 ** 31 - 1, " bytes"),
    "verify_fabric_ib_write_bw_qps": integer(1, 1024),
    "verify_fabric_ib_write_bw_duration": integer(1, 3600, " seconds"),
    "verify_fabric_ib_write_bw_use_cuda": boolean,
    "verify_fabric_ib_write_bw_out_json": boolean,
    "verify_fabric_ib_write_bw_base_port": integer(1, 65535, " (a TCP port)"),
    "verify_fabric_ib_write_bw_connect_timeout": integer(1, 600, " seconds"),
    "verify_fabric_ib_write_bw_start_timeout": integer(1, 3600, " seconds"),
    "verify_fabric_ib_write_bw_extra_args": ARGV,
    "verify_fabric_ib_send_bw_rounds": integer(0, 64),
    "verify_fabric_ib_send_bw_duration": integer(1, 3600, " seconds"),
    "verify_fabric_ib_send_bw_size": integer(1, 2 ** 31 - 1, " bytes"),
    "verify_fabric_ib_send_bw_qps": integer(1, 1024),
    "verify_fabric_ib_write_lat_tool": choice("ib_write_lat", "ib_send_lat"),
    "verify_fabric_ib_write_lat_rounds": integer(0, 64),
    "verify_fabric_ib_write_lat_size": integer(1, 2 ** 23, " bytes"),
    "verify_fabric_ib_write_lat_iterations": integer(5, 10 ** 8),
    "verify_fabric_gpudirect_rounds": integer(0, 64, ": the plan's first rounds (0: every round)"),
    "verify_fabric_gpudirect_duration": integer(1, 3600, " seconds"),
    "verify_fabric_gdrcopy_sanity": boolean,
    "verify_fabric_gdrcopy_timeout": integer(1, 3600, " seconds"),
    "verify_fabric_launchers": boolean,
    "verify_fabric_launchers_dir": local_path(),
    "verify_fabric_launch_rail_pinning": choice("topology", "nearest"),
    "verify_fabric_launch_master_port": integer(1, 65535, " (a TCP port)"),
    "verify_fabric_nccl_launch": choice("node", "rank_per_gpu"),
    "verify_fabric_nccl_binding": choice("auto", "numactl", "none"),
    "verify_fabric_nccl_tree_spawn": either(boolean, choice("auto"), allowed="auto, true or false"),
    "verify_fabric_nccl_launch_radix": integer(1, 4096, ": the most SSH sessions one node opens"),
    "verify_fabric_nccl_plan": ANY_DICT,
    "verify_fabric_nccl_loopback_test": choice(*NCCL_TESTS),
    "verify_fabric_nccl_loopback_bytes": fmt(_NCCL_SIZE),
    "verify_fabric_nccl_loopback_env": ENV_MAP,
    "verify_fabric_nccl_scaling_test": choice(*NCCL_TESTS),
    "verify_fabric_nccl_scaling_min_efficiency": number(0.01, 1, ": a share of the first step's bus bandwidth"),
    "verify_fabric_incast_receiver": one_node(text(253, empty=False),
                                              "the one host that receives (an inventory name)"),
    "verify_fabric_incast_max_senders": integer(2, 1023, ": incast needs at least 2 senders to congest a port"),
    "verify_fabric_incast_senders": listing(one_node(text(253, empty=False),
                                                     "each entry one sender host (an inventory name)"),
                                            min_len=2, max_len=1023,
                                            what="a list of sender hosts (incast needs at least 2)"),
    "verify_fabric_incast_duration": integer(1, 3600, " seconds"),
    "verify_fabric_incast_base_port": integer(1, 65535, " (a TCP port)"),
    "verify_fabric_nccl_tests": listing(choice(*NCCL_TESTS), min_len=1, what="a list of nccl-tests programs"),
    "verify_fabric_nccl_gpus": integer(1, 64, " GPUs per node"),
    "verify_fabric_nccl_min_bytes": fmt(_NCCL_SIZE),
    "verify_fabric_nccl_max_bytes": fmt(_NCCL_SIZE),
    "verify_fabric_nccl_iterations": integer(1, 100000),
    "verify_fabric_nccl_env": ENV_MAP,
    "verify_fabric_nccl_json": boolean,
    "verify_fabric_nccl_timeout": integer(1, 86400, " seconds"),
    # NCCL tuning sweep (playbooks/nccl_tune.yml, docs/tuning.md)
    "verify_fabric_nccl_tune": boolean,
    "verify_fabric_nccl_tune_candidates": listing(nccl_tune_candidate, min_len=1, max_len=32,
                                                  what="a list of {algorithm, protocol}"),
    "verify_fabric_nccl_tune_scales": nccl_tune_scales,
    "verify_fabric_nccl_tune_check_tests": listing(choice(*nccl_tune.TESTS), min_len=1,
                                                   what="a list of nccl-tests collectives"),
    "verify_fabric_nccl_tune_repeats": integer(2, 10, " interleaved rounds (one run shows no noise)"),
    "verify_fabric_nccl_tune_margin_percent": number(0.5, 100, " percent a candidate must beat NCCL's pick by"),
    "verify_fabric_nccl_tune_tolerance_percent": number(0, 50, " percent a collective may lose with the tuner file"),
    "verify_fabric_nccl_tune_min_points": integer(1, 64, " consecutive sizes a tuner row spans"),
    "verify_fabric_nccl_tune_max_runs": integer(2, 2000, " nccl-tests runs of each phase"),
    "verify_fabric_nccl_tune_time_budget": integer(60, 86400, " seconds for each phase"),
    "verify_fabric_nccl_tune_plugin": fmt((r"[A-Za-z0-9._/+-]{1,255}", "a library name or path")),
    "verify_fabric_nccl_tune_stage_file": path(),
    "verify_fabric_nccl_tune_rollback": boolean,
    "verify_fabric_nccl_tune_rollback_to": either(shape(type(None), "null"), integer(1, 1000000),
                                                  allowed="null (the file before the newest sweep's) or a history "
                                                          "entry's number"),
    "verify_fabric_nccl_tuned_required": boolean,
    "verify_fabric_nccl_tune_test": choice(*NCCL_TESTS),
    "verify_fabric_nccl_tune_min_bytes": fmt(_NCCL_SIZE),
    "verify_fabric_nccl_tune_max_bytes": fmt(_NCCL_SIZE),
    "verify_fabric_nccl_tune_file": local_path(),
    "verify_fabric_mpi_ifname": intent_format("ifname_list"),
    "verify_fabric_mpirun_args": ARGV,
    "verify_fabric_mpi_ssh_setup": boolean,
    "verify_fabric_mpi_ssh_key": path(),
    "verify_fabric_mpi_authorized_keys": path(),
    "verify_fabric_mpi_key_from": mpi_from,
    "verify_fabric_keep_mpi_key": boolean,
    "verify_fabric_expect_gdr": boolean,
    "verify_fabric_reports_dir": local_path(),
    # the drain budget's state (host/breaker.py): a file on the controller
    "verify_fabric_remediation_state_file": local_path(),
    "verify_fabric_fail": boolean,
    "verify_fabric_cabling_host_lldp": boolean,
    # role k8s_render (module_utils/intent/k8s_render.py renders; docs/kubernetes.md)
    "k8s_render_output_dir": local_path(),
    "k8s_render_host_group": intent_format("name"),
    "k8s_render_name": fmt((k8s_render.DNS_LABEL.pattern, "a DNS label: a-z 0-9 -, starting and ending alphanumeric")),
    "k8s_render_namespace": fmt((k8s_render.DNS_LABEL.pattern, "a Kubernetes namespace name (a DNS label: a-z 0-9 -)")),
    "k8s_render_gang_scheduler": choice(*k8s_render.GANG_SCHEDULERS),
    "k8s_render_queue": fmt((k8s_render.DNS_LABEL.pattern, "a Kueue LocalQueue name (a DNS label: a-z 0-9 -)")),
    "k8s_render_rdma_resources": choice(*k8s_render.RDMA_RESOURCES),
    "k8s_render_rdma_hca_max": integer(1, 1000, ": pods one RDMA shared resource serves on a node"),
    "k8s_render_cni": choice(*k8s_render.CNI_TYPES),
    "k8s_render_ofed_driver": choice(*k8s_render.OFED_DRIVERS),
    "k8s_render_ofed_version": release(fmt((k8s_render.OFED_TAG.pattern, "a doca-driver image tag such as "
                                            "doca3.4.1-26.04-1.1.0.0-1"), empty=True), "doca3.4.1-26.04-1.1.0.0-1"),
    "k8s_render_image": fmt((k8s_render.IMAGE.pattern, "a container image reference with nccl-tests, Open MPI and "
                             "sshd, such as registry.example.org/nccl-tests:2.13.11"), empty=True),
    "k8s_render_pytorch_image": fmt((k8s_render.IMAGE.pattern, "a container image reference with PyTorch, such as "
                                     "nvcr.io/nvidia/pytorch:24.10-py3")),
    "k8s_render_gpus_per_node": integer(1, 64, " GPUs per node"),
    "k8s_render_nodes": integer(0, 100000, " nodes (0: every node of k8s_render_host_group)"),
    "k8s_render_shm_size": fmt((k8s_render.QUANTITY.pattern, "a Kubernetes quantity such as 64Gi")),
    "k8s_render_nccl_test": choice(*NCCL_TESTS),
    "k8s_render_nccl_min_bytes": fmt(_NCCL_SIZE),
    "k8s_render_nccl_max_bytes": fmt(_NCCL_SIZE),
    "k8s_render_socket_ifname": intent_format("ifname_list"),
    "k8s_render_gid_index": GID_INDEX,
    "k8s_render_nccl_net": intent_format("nccl_value"),
    "k8s_render_nccl_overrides": NCCL_OVERRIDES,
    "k8s_render_nccl_tuned_file": local_path(),
    "k8s_render_nccl_tuner_config_file": path(),
    "k8s_render_apply": boolean,
    "k8s_render_kubeconfig": local_path(empty=True),
    "k8s_render_context": text(253),
    # the current APIs (issue 37): Trainer v2 / training-operator v1, nv-ipam, GPU Operator, binding, Kueue
    "k8s_render_training_api": choice(*k8s_jobs.TRAINING_APIS),
    "k8s_render_ipam": choice(*k8s_render.IPAMS),
    "k8s_render_ipam_namespace": fmt((k8s_render.DNS_LABEL.pattern, "the namespace nv-ipam watches (a DNS label), "
                                      "network-operator's: nvidia-network-operator")),
    "k8s_render_ipam_block_size": integer(1, 65536, ": pod addresses of a node on an L2 rail (IPPool perNodeBlockSize)"),
    "k8s_render_ipam_gateway_index": integer(1, 65536, ": the leaf's address in each node's prefix on an L3 rail "
                                                       "(CIDRPool gatewayIndex)"),
    "k8s_render_node_name": fmt((k8s_render.DNS_SUBDOMAIN.pattern, "the node's Kubernetes name (a DNS subdomain); "
                                 "empty: its inventory name"), empty=True),
    "k8s_render_gpu_driver": choice(*k8s_render.GPU_DRIVERS),
    "k8s_render_binding": choice(*k8s_render.BIND_POLICIES),
    "k8s_render_layout_file": local_path(),
    "k8s_render_kueue_pods_ready_timeout": fmt((k8s_render.DURATION.pattern, "a duration such as 10m or 1h30m")),
    "k8s_render_kueue_block_admission": boolean,
    "k8s_render_kueue_requeue_limit": either(fmt((r"", "")), integer(0, 1000),
                                             allowed="empty (requeue without limit) or 0..1000"),
    # Ansible's connection variables (the switch role reads them; every host is reached by them)
    "ansible_host": host_address,
    "ansible_port": integer(1, 65535, " (a TCP port)"),
    "ansible_user": fmt(_USER),
    "ansible_password": text(1024),
    "ansible_become_password": text(1024),   # the EOS enable secret (switch_fabric_enable_secret)
    "ansible_ssh_private_key_file": text(4096),
    "switch_username": fmt(_USER),
    "switch_password": text(1024),
    "switch_private_key_file": text(4096),
    "switch_ssh_config_file": text(4096),
    "switch_known_hosts": text(4096),
    # playbooks
    "audit_benchmarks": boolean,
    "linerate_output_dir": local_path(),
    # the NCCL tuning sweep's tuned file is in use: a missing one is NCCL_TUNED_MISSING (docs/tuning.md)
    "linerate_nccl_tuning": boolean,
    # acting on findings (roles/remediate, docs/audit.md)
    "remediate_control_host": one_node(text(253, empty=False), "the one host scontrol or kubectl runs on"),
    "remediate_scontrol": text(4096, empty=False),
    "remediate_kubectl": text(4096, empty=False),
    "remediate_metrics_dir": path(),
    "remediate_metrics_file": fmt((r"[A-Za-z0-9_.-]{1,64}\.prom", "a file name ending in .prom (1-64 of letters, "
                                   "digits, _ . -): node_exporter's textfile collector reads *.prom only")),
    # the controller's fleet textfile; '' writes none
    "remediate_fleet_metrics_file": local_path(empty=True),
    "linerate_drain": boolean,
    "linerate_metrics": boolean,
    "linerate_report_keep": integer(1, 100000, " runs kept under <linerate_output_dir>/reports"),
    # a trend's bandwidth drop (report/history.py, docs/audit.md): a share of the previous run's figure
    "linerate_trend_bandwidth_drop": share,
    "linerate_slurm_node_name": one_node(text(253, empty=False),
                                         "this host's own name in Slurm (scontrol show node <name>), set per host "
                                         "in host_vars"),
    "linerate_k8s_node_name": one_node(fmt((r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?",
                                            "a Kubernetes node name (a DNS subdomain: a-z 0-9 - ., at most 253)")),
                                       "this host's own node name in Kubernetes, set per host in host_vars"),
}
