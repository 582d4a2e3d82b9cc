"""Switch platform drivers (NVUE, SONiC, EOS) over netmiko, and the push workflow."""
