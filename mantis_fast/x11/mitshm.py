"""MIT-SHM (X shared-memory extension) requests as python-xlib protocol structs.

python-xlib ships no MIT-SHM module. These are the four requests capture needs, laid out as in
the protocol's ``shmproto.h`` (QueryVersion 0, Attach 1, Detach 2, GetImage 4).
"""

from __future__ import annotations

from Xlib import X
from Xlib.protocol import rq

EXTENSION_NAME = "MIT-SHM"
ALL_PLANES = 0xFFFFFFFF


class QueryVersion(rq.ReplyRequest):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(0),
        rq.RequestLength(),
    )
    _reply = rq.Struct(
        rq.ReplyCode(),
        rq.Bool("shared_pixmaps"),
        rq.Card16("sequence_number"),
        rq.ReplyLength(),
        rq.Card16("major_version"),
        rq.Card16("minor_version"),
        rq.Card16("uid"),
        rq.Card16("gid"),
        rq.Card8("pixmap_format"),
        rq.Pad(15),
    )


class Attach(rq.Request):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(1),
        rq.RequestLength(),
        rq.Card32("shmseg"),
        rq.Card32("shmid"),
        rq.Bool("read_only"),
        rq.Pad(3),
    )


class Detach(rq.Request):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(2),
        rq.RequestLength(),
        rq.Card32("shmseg"),
    )


class GetImage(rq.ReplyRequest):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(4),
        rq.RequestLength(),
        rq.Drawable("drawable"),
        rq.Int16("x"),
        rq.Int16("y"),
        rq.Card16("width"),
        rq.Card16("height"),
        rq.Card32("plane_mask"),
        rq.Card8("format"),
        rq.Pad(3),
        rq.Card32("shmseg"),
        rq.Card32("offset"),
    )
    _reply = rq.Struct(
        rq.ReplyCode(),
        rq.Card8("depth"),
        rq.Card16("sequence_number"),
        rq.ReplyLength(),
        rq.Card32("visual"),
        rq.Card32("size"),
        rq.Pad(16),
    )


def query_version(display, opcode: int) -> QueryVersion:
    return QueryVersion(display=display, opcode=opcode)


def attach(display, opcode: int, shmseg: int, shmid: int, *, read_only: bool = False) -> None:
    Attach(display=display, opcode=opcode, shmseg=shmseg, shmid=shmid, read_only=read_only)


def detach(display, opcode: int, shmseg: int) -> None:
    Detach(display=display, opcode=opcode, shmseg=shmseg)


def encode_get_image(
    opcode: int, drawable: int, x: int, y: int, width: int, height: int, shmseg: int, offset: int
) -> bytes:
    """The wire bytes of a ZPixmap GetImage into ``shmseg`` at ``offset`` (cacheable: X requests
    carry no sequence number)."""
    return GetImage._request.to_binary(
        opcode=opcode,
        drawable=drawable,
        x=x,
        y=y,
        width=width,
        height=height,
        plane_mask=ALL_PLANES,
        format=X.ZPixmap,
        shmseg=shmseg,
        offset=offset,
    )
