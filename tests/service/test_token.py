"""``check_token``, the service's 401: it says whether the token is missing (no header, or a
blank one: what a client without a token sends) or wrong, and compares in constant time."""

from __future__ import annotations

import pytest

from mantis_fast.errors import InvalidInputError, RequestRejected
from mantis_fast.service.cua import check_token

TOKEN = "s3cret-token"


def test_the_right_token_passes() -> None:
    check_token(TOKEN, TOKEN)
    check_token("ünïcode-tökén", "ünïcode-tökén")


@pytest.mark.parametrize(
    ("sent", "message"),
    [
        (None, "missing X-Mantis-Token header"),
        ("", "missing X-Mantis-Token: the header is empty"),
        ("  ", "missing X-Mantis-Token: the header is empty"),
        ("s3cret-tokem", "wrong X-Mantis-Token"),
        ("s3cret-token ", "wrong X-Mantis-Token"),
        ("S3CRET-TOKEN", "wrong X-Mantis-Token"),
        ("s3cret-token\udcff", "wrong X-Mantis-Token"),  # aiohttp's undecodable header bytes
    ],
)
def test_a_refused_token_says_whether_it_is_missing_or_wrong(
    sent: str | None, message: str
) -> None:
    with pytest.raises(RequestRejected) as refused:
        check_token(sent, TOKEN)
    assert refused.value.status == 401
    assert str(refused.value) == message
    assert isinstance(refused.value, InvalidInputError)
