"""linerate's lab: the simulated hardware of a GPU cluster's RDMA fabric.

Everything here is stdlib-only: it runs inside the lab's node containers
(Debian's python3, nothing else) as well as on the controller.
"""
