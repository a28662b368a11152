#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
#
# What kbv's stub providers return (src/ibverbs/stubs), one call of each kind
# of failure their man pages document, run by meson (suite 'e2e'):
#   stubs_test.py LIBMLX5 LIBEFA
# The stubs touch no argument, so NULL/0 arguments are safe here.
import ctypes
import errno
import sys

P = ctypes.c_void_p


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def call(lib, name, restype, nargs):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = [P] * nargs
    ctypes.set_errno(0)
    r = f(*([None] * nargs))
    return r, ctypes.get_errno()


def expect_null(lib, name, nargs):
    r, e = call(lib, name, P, nargs)
    if r is not None or e != errno.EOPNOTSUPP:
        fail("%s returned %r with errno %d, not NULL with EOPNOTSUPP" % (name, r, e))
    print("%s: NULL, errno EOPNOTSUPP" % name)


def expect_value(lib, name, nargs, want, want_errno=errno.EOPNOTSUPP, restype=ctypes.c_int):
    r, e = call(lib, name, restype, nargs)
    if r != want or e != want_errno:
        fail("%s returned %r with errno %d, not %r with errno %d" % (name, r, e, want, want_errno))
    print("%s: %r" % (name, r))


def main():
    mlx5 = ctypes.CDLL(sys.argv[1], use_errno=True)
    efa = ctypes.CDLL(sys.argv[2], use_errno=True)

    r, _ = call(mlx5, "mlx5dv_is_supported", ctypes.c_bool, 1)
    if r is not False:
        fail("mlx5dv_is_supported is not false")
    print("mlx5dv_is_supported: false")
    expect_null(mlx5, "mlx5dv_open_device", 2)
    expect_null(mlx5, "mlx5dv_create_qp", 3)
    expect_null(mlx5, "mlx5dv_create_cq", 3)
    expect_null(mlx5, "mlx5dv_qp_ex_from_ibv_qp_ex", 1)
    expect_null(mlx5, "mlx5dv_devx_obj_create", 5)
    expect_null(mlx5, "mlx5dv_dr_action_create_drop", 0)
    expect_null(mlx5, "mlx5dv_get_vfio_device_list", 1)
    expect_value(mlx5, "mlx5dv_query_device", 2, errno.EOPNOTSUPP)
    expect_value(mlx5, "mlx5dv_init_obj", 2, errno.EOPNOTSUPP)
    expect_value(mlx5, "mlx5dv_devx_general_cmd", 5, errno.EOPNOTSUPP)
    expect_value(mlx5, "mlx5dv_dr_domain_destroy", 1, errno.EOPNOTSUPP)
    expect_value(mlx5, "_mlx5dv_query_port", 4, errno.EOPNOTSUPP)
    expect_value(mlx5, "mlx5dv_qp_cancel_posted_send_wrs", 2, -errno.EOPNOTSUPP)
    expect_value(mlx5, "mlx5dv_vfio_get_events_fd", 1, -1)
    expect_value(mlx5, "mlx5dv_devx_get_event", 3, -1, restype=ctypes.c_ssize_t)

    expect_null(efa, "efadv_create_driver_qp", 3)
    expect_null(efa, "efadv_create_qp_ex", 4)
    expect_null(efa, "efadv_create_cq", 4)
    expect_null(efa, "efadv_cq_from_ibv_cq_ex", 1)
    expect_value(efa, "efadv_query_device", 3, errno.EOPNOTSUPP)
    expect_value(efa, "efadv_query_ah", 3, errno.EOPNOTSUPP)
    print("PASS")


if __name__ == "__main__":
    main()
