"""A minimal Gluon kernel (Triton's explicit-layout dialect) for the launch recorder's tests."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def gluon_copy_kernel(x_ptr, y_ptr, BLOCK: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=gl.BlockedLayout([1], [32], [4], [0]))
    gl.store(y_ptr + offs, gl.load(x_ptr + offs))
