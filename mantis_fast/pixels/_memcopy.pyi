# Stub for the compiled module built from _memcopy.pyx beside it.

import numpy as np
import numpy.typing as npt

MAX_THREADS: int

def copy_rows(
    dst: npt.NDArray[np.uint8], src: npt.NDArray[np.uint8], row_bytes: int, threads: int
) -> None: ...  # rows of row_bytes contiguous bytes, strides[0] apart; no overlap
def packed_rows(
    src: npt.NDArray[np.uint8], row_bytes: int, threads: int
) -> bytearray: ...  # a new bytearray of src's rows back to back
