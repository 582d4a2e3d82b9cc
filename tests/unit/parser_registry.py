"""Every parse_<tool> function of plugins/module_utils, with the fixtures it reads.

One line per parser: ``("<module under module_utils>", "<function>", "<fixture glob>"[, ...])``.
The fuzz tests (test_parsers_fuzz.py) mutate every fixture a glob matches
and require a result or a ParseError, nothing else; test_every_parser_is_registered
fails for a parse_* function that has no line here. Globs are relative to
tests/unit/fixtures/ and may list several (a tool read in text and JSON).
"""

PARSERS = [
    ("ncclconf", "parse_nccl_conf", "ncclconf/*.txt"),
    ("counters", "parse_ethtool_stats", "counters/ethtool_*.txt"),
    ("counters", "parse_rdma_statistic", "counters/rdma_statistic_*.txt"),
    ("counters", "parse_hw_counters", "counters/hw_counters_*.txt", "counters/rdma_statistic_*.txt"),
    ("linkhealth", "parse_perfquery", "counters/perfquery_*.txt"),
    ("linkhealth", "parse_ibqueryerrors", "counters/ibqueryerrors_*.txt"),
    ("linkhealth", "parse_mlxlink", "counters/mlxlink_*.txt"),
    ("switch_counters", "parse_sonic_pfc_counters", "counters/sonic_pfc_counters_*.txt"),
    ("switch_counters", "parse_sonic_queue_counters", "counters/sonic_queue_counters_*.txt"),
    ("switch_counters", "parse_nvue_roce_counters", "counters/nvue_roce_counters_*.txt"),
    ("switch_counters", "parse_eos_pfc_counters", "counters/eos_pfc_*"),
    ("dpkg", "parse_dpkg_query", "dpkg/*.txt"),
    ("ibtools", "parse_ibstat", "ibstat/*.txt", "rdma_facts/ibstat.txt"),
    ("ibtools", "parse_ibv_devinfo", "ibv_devinfo/*.txt", "rdma_facts/ibv_devinfo_v.txt"),
    ("ibtools", "parse_ibdev2netdev", "ibdev2netdev/*.txt", "rdma_facts/ibdev2netdev_v.txt"),
    ("ibtools", "parse_show_gids", "show_gids/*.txt", "rdma_facts/show_gids.txt"),
    ("ibtools", "parse_rdma_link", "rdma_link/*.txt", "rdma_link/*.json"),
    ("ibdiag", "parse_sminfo", "sminfo/*.txt"),
    ("ibdiag", "parse_ibnetdiscover", "ibnetdiscover/*.txt"),
    ("ibdiag", "parse_iblinkinfo", "iblinkinfo/*.txt"),
    ("ibdiag", "parse_smpquery_pkeys", "smpquery/*.txt"),
    ("mlnx_qos", "parse_mlnx_qos", "mlnx_qos/*.txt"),
    ("mlxconfig", "parse_mlxconfig", "mlxconfig/query_*.txt", "mlxconfig/real_q*.txt", "mlxconfig/real_e_*.txt",
     "connectx/query_*.txt"),
    ("mlxconfig", "parse_mlxfwreset_query", "mlxfwreset/query_*.txt", "connectx/fwreset_query_*.txt"),
    ("mlxconfig", "parse_mlxfwreset", "mlxfwreset/*.txt", "connectx/fwreset_cx7_ok.txt"),
    ("nccl_tests", "parse_nccl_tests", "nccl_tests/*.txt", "nccl_tests/*.json"),
    ("nccl_log", "parse_nccl_log", "nccl_logs/*.txt"),
    ("perftest", "parse_ib_write_bw", "perftest/*.txt", "perftest/*.json"),
    ("perftest", "parse_perftest", "perftest/client_*.txt", "perftest/real_client_*.txt"),
    ("switch.nvue", "parse_nvue_commands", "switch/nvue_config_show_commands.txt"),
    ("switch.nvue", "parse_interface_summary", "switch/nvue_show_interface.*", "switch/real_nvue_show_interface_*.txt"),
    ("switch.nvue", "parse_roce_status", "switch/nvue_roce_status_*.txt", "switch/real_nvue_roce_status_*.txt"),
    ("switch.nvue", "parse_revisions", "switch/nvue_revision.txt", "switch/real_nvue_revision_*.txt"),
    ("switch.eos", "parse_eos_config", "switch/eos_running.txt", "switch/real_eos_running_*.txt"),
    ("switch.eos", "parse_sessions", "switch/eos_sessions.txt"),
    ("switch.eos", "parse_interfaces_status", "switch/eos_interfaces_status.*", "switch/real_eos_interfaces_status_*.txt"),
    ("switch.sonic", "parse_config_db", "switch/sonic_running.json"),
    ("switch.sonic", "parse_table", "switch/sonic_interfaces_status.txt", "switch/sonic_pfc_priority.txt",
     "switch/real_sonic_interfaces_status_*.txt"),
    ("switch.sonic", "parse_pfc_priority", "switch/sonic_pfc_priority.txt", "switch/real_sonic_pfc_priority_*.txt"),
    ("switch.sonic", "parse_interfaces_status", "switch/sonic_interfaces_status.txt",
     "switch/real_sonic_interfaces_status_*.txt"),
    ("switch.sonic", "parse_show_ecn", "switch/sonic_show_ecn.txt", "switch/real_sonic_show_ecn_*.txt"),
]
