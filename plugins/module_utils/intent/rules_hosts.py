"""The rules of the host roles' variables (mofed, nccl_env, ib_subnet_manager, connectx_firmware,
host_disruption, nvidia_peermem, rdma_netdev, roce_qos): one entry of intent/variables.py's RULES
per variable, built with the checks of intent/varcheck.py.

Stdlib only (plus the sibling intent modules).
"""
from ansible_collections.linerate.fabric.plugins.module_utils.intent import cabling
from ansible_collections.linerate.fabric.plugins.module_utils.intent.fabric import (
    FIRMWARE_PROFILES, LINK_SPEEDS_GBPS, LINK_WIDTHS, NCCL_GDR_LEVELS, TRANSPORTS, TRUST_MODES)
from ansible_collections.linerate.fabric.plugins.module_utils.intent import infiniband
from ansible_collections.linerate.fabric.plugins.module_utils.intent import preflight
from ansible_collections.linerate.fabric.plugins.module_utils.intent.knobs import one_node, release
from ansible_collections.linerate.fabric.plugins.module_utils.intent.varcheck import (
    ANY_DICT, ANY_LIST, APT_SCHEMES, ARGV, boolean, choice, devices, either, ENV_MAP, fmt, GID_INDEX, integer,
    intent_format, KEY_SCHEMES, _KMOD, listing, local_path, mapping, meta_packages, _MLX_NAME, MLX_PARAMS,
    NCCL_OVERRIDES, _PACKAGE, PACKAGES, path, _PSID, RESET_LEVELS, restart_command, _SUITE, _UNIT, url, _VERSION)
from ansible_collections.linerate.fabric.plugins.module_utils.parsers.linkhealth import IB_ERROR_COUNTERS

# The rollout's spread labels (module_utils/host/rollout.py LABEL_RE, the same pattern): a node's rack and
# NVLink domain, never two of one disrupted in the same wave (fabric.rollout.spread).
_ROLLOUT_LABEL = (r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}",
                  "a name of 1..128 characters: letters, digits and . _ : / - (starting with a letter or digit)")

# The job preflight's forms (intent/preflight.py): NCCL's release as libnccl2 prints it, a net plugin's
# library name, the handshake's program.
_NCCL_RELEASE = (r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}", "an NCCL release major.minor.patch such as 2.21.5")
_NET_PLUGIN = (r"[A-Za-z0-9_.+-]{1,64}", "a net plugin's library name (libnccl-net.so or libnccl-net-<name>.so)")
_PROGRAM = (r"[A-Za-z0-9_./-]{1,255}", "a program name or path (letters, digits and _ . / -)")

HOST_RULES = {
    # the host stack's rollout in waves (playbooks/stages/hosts.yml, docs/host-stack.md)
    "linerate_rack": fmt(_ROLLOUT_LABEL, empty=True),
    "linerate_nvlink_domain": fmt(_ROLLOUT_LABEL, empty=True),
    # role mofed (mofed_source: cabling.validate_cabling, with the reason inbox is rejected)
    "mofed_version": release(fmt(_VERSION), "24.10-1.1.4"),
    "mofed_doca_version": release(fmt(_VERSION), "2.9.1"),
    "mofed_repo_url": url(APT_SCHEMES),
    "mofed_repo_suite": fmt(_SUITE),
    "mofed_repo_signed_by": path(),
    "mofed_repo_key_url": url(KEY_SCHEMES, empty=True),
    "mofed_repo_trusted": boolean,
    "mofed_meta_package_by_source": meta_packages,
    "mofed_kernel_package_by_source": mapping(choice(*cabling.MOFED_SOURCES), fmt(_PACKAGE, empty=True)),
    "mofed_kernel_package": fmt(_PACKAGE, empty=True),
    "mofed_hold_packages": PACKAGES,
    "mofed_hold": boolean,
    "mofed_allow_driver_restart": boolean,
    "mofed_driver_restart_command": restart_command,
    "mofed_reachability_timeout": integer(1, 3600, " seconds"),
    "mofed_driver_modules": listing(fmt(_KMOD), min_len=1, what="a list of kernel module names, the first the one whose "
                                    "installed and loaded versions are compared (mlx5_core)"),
    "mofed_driver_dependents": listing(fmt(_KMOD), what="a list of kernel module names"),
    "mofed_sysfs": path(),
    # role nccl_env
    "nccl_env_ports": ANY_LIST,
    "nccl_env_down_ports": choice("fail", "exclude"),
    "nccl_env_wait_up": integer(0, 3600, " seconds"),
    "nccl_env_transport": choice(*TRANSPORTS),
    "nccl_env_socket_ifname": intent_format("ifname_list"),
    "nccl_env_gdr_level": choice(*NCCL_GDR_LEVELS),
    "nccl_env_ib_tc": either(lambda c, k, v: v is None or v == "", integer(0, 255),
                             allowed="empty or a traffic class 0..255"),
    "nccl_env_gid_index": GID_INDEX,
    "nccl_env_net": intent_format("nccl_value"),
    "nccl_env_overrides": NCCL_OVERRIDES,
    "nccl_env_tuned_file": local_path(),
    "nccl_env_tuned_history_file": local_path(),
    "nccl_env_tuned_required": boolean,
    "nccl_env_tuner_config_file": path(),
    "nccl_env_job_env_file": path(),
    "nccl_env_conf_path": path(),
    "nccl_env_env_file": path(),
    "nccl_env_profile_script": path(),
    # role ib_subnet_manager
    "ib_subnet_manager_intent": ANY_DICT,
    "ib_subnet_manager_group": intent_format("name"),
    "ib_subnet_manager_master": one_node(intent_format("name"), "the inventory host of the master subnet manager"),
    "ib_subnet_manager_priority": integer(0, 15),
    "ib_subnet_manager_routing_engine": choice(*infiniband.ROUTING_ENGINES),
    "ib_subnet_manager_lmc": integer(0, 7),
    "ib_subnet_manager_sweep_interval": integer(0, 86400, " seconds"),
    "ib_subnet_manager_log_file": path(),
    "ib_subnet_manager_log_max_size_mb": integer(0, 1048576),
    "ib_subnet_manager_log_flags": integer(0, 255),
    "ib_subnet_manager_log_verbose": boolean,
    "ib_subnet_manager_default_partition_ipoib": boolean,
    "ib_subnet_manager_default_partition_membership": choice(*infiniband.MEMBERSHIPS),
    "ib_subnet_manager_port_guid": intent_format("guid"),
    "ib_subnet_manager_install_packages": boolean,
    "ib_subnet_manager_packages": PACKAGES,
    "ib_subnet_manager_disable_packaged_service": boolean,
    "ib_subnet_manager_config_dir": path(),
    "ib_subnet_manager_state_dir": path(),
    "ib_subnet_manager_dump_dir": path(),
    "ib_subnet_manager_env_file": path(),
    "ib_subnet_manager_service_name": fmt(_UNIT),
    "ib_subnet_manager_service_manager": choice("auto", "systemd", "pidfile"),
    "ib_subnet_manager_pid_file": path(),
    "ib_subnet_manager_ctl_path": path(),
    "ib_subnet_manager_environment": ENV_MAP,
    "ib_subnet_manager_wait_master": boolean,
    "ib_subnet_manager_wait_timeout": integer(1, 3600, " seconds"),
    "ib_subnet_manager_check_fail": boolean,
    "ib_subnet_manager_link_width": choice(*LINK_WIDTHS),
    "ib_subnet_manager_link_speed_gbps": choice(*LINK_SPEEDS_GBPS),
    "ib_subnet_manager_report": local_path(empty=True),
    # fabric.verify.ib_error_thresholds (schema.py validates the same): counter -> count a port may show
    "ib_subnet_manager_error_thresholds": mapping(choice(*IB_ERROR_COUNTERS), integer(0, 2 ** 64 - 1),
                                                  "a mapping of PortCounters error counter -> an integer >= 0"),
    # role connectx_firmware
    "connectx_firmware_devices": devices,
    "connectx_firmware_ports": ANY_LIST,
    "connectx_firmware_link_type": choice("ETH", "IB"),
    "connectx_firmware_params": MLX_PARAMS,
    "connectx_firmware_profile": choice(*FIRMWARE_PROFILES),
    "connectx_firmware_roce_params": MLX_PARAMS,
    "connectx_firmware_extra_params": MLX_PARAMS,
    "connectx_firmware_allow_reset": boolean,
    "connectx_firmware_reset_level": choice(*RESET_LEVELS),
    "connectx_firmware_allow_reboot": boolean,
    "connectx_firmware_reboot_timeout": integer(60, 7200, " seconds"),
    "connectx_firmware_reconnect_timeout": integer(1, 3600, " seconds"),
    "connectx_firmware_cold_reboot_params": listing(fmt(_MLX_NAME)),
    "connectx_firmware_reboot_params": listing(fmt(_MLX_NAME)),
    "connectx_firmware_allow_update": boolean,
    "connectx_firmware_image": local_path(empty=True),
    "connectx_firmware_image_on_host": boolean,
    "connectx_firmware_image_psid": fmt(_PSID, empty=True),
    "connectx_firmware_image_dir": path(),
    "connectx_firmware_allow_downgrade": boolean,
    # role host_disruption (drain/undrain hooks around disruptive host actions)
    "host_disruption_drain_command": ARGV,
    "host_disruption_drain_on": choice("controller", "node"),
    "host_disruption_undrain_command": ARGV,
    "host_disruption_undrain_on": choice("controller", "node"),
    "host_disruption_drain_tasks": local_path(empty=True),
    "host_disruption_undrain_tasks": local_path(empty=True),
    "host_disruption_hook_timeout": integer(1, 86400, " seconds"),
    "host_disruption_force": boolean,
    "host_disruption_sysfs": path(),
    "host_disruption_action": choice("driver_restart", "firmware_reset", "netdev_change", "reboot"),
    "host_disruption_targets": ANY_LIST,
    # role nvidia_peermem
    "nvidia_peermem_state": choice("present", "absent"),
    "nvidia_peermem_modules_load_file": path(),
    "nvidia_peermem_rebuild_dkms": boolean,
    "nvidia_peermem_dkms_package": fmt(_PACKAGE),
    # role rdma_netdev
    "rdma_netdev_ports": ANY_LIST,
    "rdma_netdev_exclusive": boolean,
    "rdma_netdev_persist": boolean,
    "rdma_netdev_rail_dir": path(),
    # role roce_qos
    "roce_qos_ports": ANY_LIST,
    "roce_qos_trust": choice(*TRUST_MODES),
    "roce_qos_pfc_priorities": listing(integer(0, 7), max_len=8, what="a list of priorities 0..7"),
    "roce_qos_dscp2prio": mapping(integer(0, 63), integer(0, 7), "a mapping of DSCP 0..63 to priority 0..7"),
    "roce_qos_no_drop_priority": integer(0, 7),
    "roce_qos_cnp_dscp": integer(0, 63),
    "roce_qos_cnp_priority": integer(0, 7),
    "roce_qos_ecn_enabled": boolean,
    "roce_qos_manage_ecn": boolean,
    "roce_qos_sysfs_net": path(),
    "roce_qos_roce_mode": choice("v1", "v2"),
    "roce_qos_tos": integer(0, 255),
    "roce_qos_mtu": integer(1280, 9216),
    "roce_qos_persist": boolean,
    "roce_qos_mtu_change": choice("any", "lower", "raise"),
    "roce_qos_rail_dir": path(),
    # role job_preflight (intent/preflight.py check_params says the same of the values the role passes)
    "job_preflight_script_path": path(),
    "job_preflight_slurm_task_prolog": path(empty=True),
    "job_preflight_nccl_version": release(fmt(_NCCL_RELEASE, empty=True), "2.21.5"),
    "job_preflight_net_plugins": listing(fmt(_NET_PLUGIN), max_len=16, what="a list of NCCL net plugin names"),
    "job_preflight_min_memlock_kb": integer(-1, 2 ** 40, " KiB (-1: unlimited, what RDMA registration needs)"),
    "job_preflight_min_shm_mb": integer(0, 2 ** 30, " MiB"),
    "job_preflight_gdr": choice(*preflight.GDR),
    "job_preflight_handshake": boolean,
    "job_preflight_handshake_program": fmt(_PROGRAM),
    "job_preflight_handshake_timeout_s": integer(1, 3600, " seconds"),
    "job_preflight_bootstrap_port": integer(1, 65535, " (a TCP port)"),
    "k8s_render_preflight_nccl_version": release(fmt(_NCCL_RELEASE, empty=True), "2.21.5"),
}
