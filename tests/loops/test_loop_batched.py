"""Batched loop flags (Cython ``_loop``) against the literal reference and the streaming one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mantis_fast.errors import InvalidInputError
from mantis_fast.loops import _loop
from mantis_fast.loops.detector import DRIFT_KINDS, LoopDetector
from mantis_fast.loops.trajectory import (
    Trajectory,
    _distinct_in_windows,
    drift_loop_flags,
    encode_drift_kinds,
    repeat_loop_flags,
    state_loop_flags,
)
from tests.support.loop_reference import (
    reference_distinct,
    reference_drift_flags,
    reference_repeat_flags,
    reference_state_flags,
)

N_KINDS = len(DRIFT_KINDS)


def as_list(flags: np.ndarray) -> list[bool]:
    assert flags.dtype == np.bool_ and flags.ndim == 1
    return flags.tolist()


# --- drift kernel vs reference ------------------------------------------------------------------


def random_drift(rng, n, spread, kinds=N_KINDS + 1, zero_share=0.2):
    x = rng.integers(0, spread, n).astype(np.float64)
    y = rng.integers(0, spread, n).astype(np.float64)
    kind = rng.integers(1, kinds, n)
    kind[rng.random(n) < zero_share] = 0
    return x, y, kind


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 16, 17, 100, 1001])
@pytest.mark.parametrize("window", [2, 3, 4, 7, 16, 50, 2000])
def test_drift_sweep(n, window):
    rng = np.random.default_rng(n * 1000 + window)
    x, y, kind = random_drift(rng, n, spread=6, kinds=2, zero_share=0.02)
    tol = rng.integers(0, 6, n).astype(np.float64)
    got = drift_loop_flags(x, y, kind, tol, window)
    assert as_list(got) == reference_drift_flags(x.tolist(), y.tolist(), kind.tolist(), tol, window)
    got = drift_loop_flags(x, y, kind, 3, window)
    assert as_list(got) == reference_drift_flags(x.tolist(), y.tolist(), kind.tolist(), 3, window)


@pytest.mark.parametrize("n", [1, 5, 63, 64, 65, 1000])
@pytest.mark.parametrize("window", [2, 3, 8, 64, 1000, 1001])
def test_drift_constant_trajectory_flags_every_full_window(n, window):
    x = np.full(n, 12.5)
    flags = drift_loop_flags(x, x, np.ones(n, np.int8), 0, window)
    assert as_list(flags) == [t >= window - 1 for t in range(n)]
    assert not drift_loop_flags(x, x, np.zeros(n, np.int8), 0, window).any()


def test_drift_kind_change_breaks_every_window_through_it():
    n, window, at = 40, 5, 20
    kind = np.ones(n, np.int64)
    kind[at] = 2
    flags = drift_loop_flags(np.zeros(n), np.zeros(n), kind, 1, window)
    expected = [t >= window - 1 and not (at <= t < at + window) for t in range(n)]
    assert as_list(flags) == expected


def test_drift_tolerance_is_inclusive_and_per_first_sample():
    x = [0.0, 0.25, -0.25, 1.0, 1.0, 1.0]
    got = drift_loop_flags(x, [0.0] * 6, ["click"] * 6, [0.25, 0.0, 5.0, 0.0, 0.0, 0.0], 3)
    assert as_list(got) == [False, False, True, False, True, True]


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    n=st.integers(0, 120),
    window=st.integers(2, 40),
    per_step=st.booleans(),
)
def test_drift_matches_reference(data, n, window, per_step):
    coords = hnp.arrays(
        np.float64, n, elements=st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -1.0, 1e9])
    )
    x, y = data.draw(coords), data.draw(coords)
    kind = data.draw(hnp.arrays(np.int8, n, elements=st.sampled_from([0, 1, 1, 1, 2, 4])))
    if per_step:
        tol = data.draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 0.5, 1.0, 2.0])))
    else:
        tol = data.draw(st.sampled_from([0, 0.5, 1, 2.0]))
    got = drift_loop_flags(x, y, kind, tol, window)
    assert as_list(got) == reference_drift_flags(x.tolist(), y.tolist(), kind.tolist(), tol, window)


def test_drift_strided_and_readonly_inputs():
    rng = np.random.default_rng(3)
    x, y, kind = random_drift(rng, 400, spread=4, kinds=2, zero_share=0.0)
    big = np.stack([x, y], axis=1)  # x and y become stride-16 views
    big.flags.writeable = False
    tol = np.full(800, 2.0)[::2]
    got = drift_loop_flags(big[:, 0], big[:, 1], kind.astype(np.uint16), tol, 4)
    assert as_list(got) == reference_drift_flags(x.tolist(), y.tolist(), kind.tolist(), 2.0, 4)


def test_drift_large_trajectory_threads_agree_with_reference():
    # Longer than the kernel's parallel threshold (131072 steps): blocks are spread over threads.
    rng = np.random.default_rng(11)
    n = 200_000
    x, y, kind = random_drift(rng, n, spread=5, kinds=2, zero_share=0.01)
    tol = rng.integers(0, 5, n).astype(np.float64)
    for window in (3, 33, 5000):
        got = drift_loop_flags(x, y, kind, tol, window)
        assert got.any() or window == 5000
        assert as_list(got) == reference_drift_flags(
            x.tolist(), y.tolist(), kind.tolist(), tol, window
        )
        for threads in (1, 2, 3):  # any team size, same flags
            out = np.zeros(n, np.uint8)
            _loop.drift_flags(x, y, kind.astype(np.int8), tol, window, out, threads)
            np.testing.assert_array_equal(out.view(bool), got)


def test_drift_kind_names():
    names = ["click", "CLICK", "Double_Click", "drag", "scroll", "type_text", "hotkey"]
    assert encode_drift_kinds(names).tolist() == [1, 1, 2, 4, 0, 0, 0]
    assert encode_drift_kinds(np.array(names, dtype=object)).tolist() == [1, 1, 2, 4, 0, 0, 0]
    assert encode_drift_kinds(np.arange(N_KINDS + 1)).dtype == np.int8


# --- repeat and state kernels vs reference ------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    n=st.integers(0, 80),
    window=st.integers(2, 12),
    with_state=st.booleans(),
)
def test_repeat_matches_reference(data, n, window, with_state):
    ids = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, 2)))
    scroll = data.draw(hnp.arrays(np.bool_, n))
    state = data.draw(hnp.arrays(np.int64, n, elements=st.integers(-2, 2))) if with_state else None
    got = repeat_loop_flags(ids, window, scroll=scroll, state=state)
    assert as_list(got) == reference_repeat_flags(
        ids.tolist(), window, scroll.tolist(), None if state is None else state.tolist()
    )


@settings(max_examples=200, deadline=None)
@given(
    state=hnp.arrays(np.int64, st.integers(0, 80), elements=st.integers(-2, 2)),
    window=st.integers(2, 12),
)
def test_state_matches_reference(state, window):
    got = state_loop_flags(state, window)
    assert as_list(got) == reference_state_flags(state.tolist(), window)


def test_repeat_scroll_exception_examples():
    ids = [7, 7, 7, 7, 7]
    moving = [1, 2, 3, 4, 4]
    assert as_list(repeat_loop_flags(ids, 3, scroll=[True] * 5, state=moving)) == [
        False,
        False,
        False,
        False,
        True,
    ]
    assert as_list(repeat_loop_flags(ids, 3, scroll=[0] * 5, state=moving)) == [
        False,
        False,
        True,
        True,
        True,
    ]
    assert repeat_loop_flags(ids, 3, scroll=[True] * 5).tolist()[2:] == [True] * 3


def test_state_negative_codes_never_loop():
    assert not state_loop_flags([-1] * 10, 2).any()
    assert as_list(state_loop_flags([5, 5, -5, -5, 5, 5, 5], 2)) == [
        False,
        True,
        False,
        False,
        False,
        True,
        True,
    ]


# --- batched == streaming, step by step -----------------------------------------------------------

KINDS = ["click", "double_click", "right_click", "drag", "scroll", "scroll_up", "type_text", "wait"]
KINDS += ["key_press", "key_press"]  # keys: some navigation keys (scroll-like), some not
REASONS = ["", "the submit button", "a link", "the dropdown", "select the card", "an anchor"]


@st.composite
def steps(draw):
    def action(kind, x, y, key, why, form):
        if form == 0:
            return {"type": kind, "x": x, "y": y, "key": key, "reasoning": why}
        if form == 1:
            return {"type": kind, "params": {"start_x": x, "start_y": y, "key": key}}
        return {"type": kind, "key": key, "reasoning": why}  # no point: cannot drift

    one = st.builds(
        action,
        st.sampled_from(KINDS),
        st.integers(0, 20),
        st.integers(0, 20),
        st.sampled_from(["a", "b", "Page_Down", "ctrl+j"]),
        st.sampled_from(REASONS),
        st.sampled_from([0, 0, 0, 1, 2]),
    )
    # Runs of repeated actions make every loop kind likely.
    runs = draw(st.lists(st.tuples(one, st.integers(1, 5)), max_size=16))
    actions = [a for a, k in runs for _ in range(k)]
    urls = draw(
        st.lists(st.sampled_from(["", "u1", "u2"]), min_size=len(actions), max_size=len(actions))
    )
    frames = draw(
        st.lists(
            st.sampled_from([None, "", "h1", "h1", "h2"]),
            min_size=len(actions),
            max_size=len(actions),
        )
    )
    return actions, urls, frames


@settings(max_examples=150, deadline=None)
@given(
    trajectory=steps(),
    window=st.integers(2, 6),
    tol=st.sampled_from([0, 2, 5, 8, 9]),
    adaptive=st.sampled_from([True, False]),
)
def test_batched_equals_streaming(trajectory, window, tol, adaptive):
    actions, urls, frames = trajectory
    batched = Trajectory.from_actions(
        actions, urls=urls, frames=frames, click_tol_px=tol, adaptive=adaptive
    )
    detector = LoopDetector(tol, history=window + 2, adaptive=adaptive)
    streamed = {"drift": [], "repeat": [], "state": [], "any": []}
    for action, url, frame in zip(actions, urls, frames, strict=True):
        detector.record(action, url=url, frame=frame)
        streamed["drift"].append(detector.is_drift_loop(window))
        streamed["repeat"].append(detector.is_repeat_loop(window))
        streamed["state"].append(detector.is_state_loop(window))
        streamed["any"].append(detector.is_any_loop(window))
    assert as_list(batched.drift_flags(window)) == streamed["drift"]
    assert as_list(batched.repeat_flags(window)) == streamed["repeat"]
    assert as_list(batched.state_flags(window)) == streamed["state"]
    assert as_list(batched.any_flags(window)) == streamed["any"]


@settings(max_examples=150, deadline=None)
@given(
    trajectory=steps(),
    window=st.integers(2, 6),
    extension=st.integers(0, 3),
)
def test_batched_adaptive_windows_equal_streaming(trajectory, window, extension):
    actions, urls, frames = trajectory
    batched = Trajectory.from_actions(actions, urls=urls, frames=frames, click_tol_px=5)
    detector = LoopDetector(5, history=window + extension + 1, adaptive_windows=True)
    streamed = {"diversity": [], "progressed": [], "window": [], "any": []}
    for action, url, frame in zip(actions, urls, frames, strict=True):
        detector.record(action, url=url, frame=frame)
        streamed["diversity"].append(detector.pattern_diversity(window))
        streamed["progressed"].append(detector.state_progressed(window))
        streamed["window"].append(detector.adaptive_window(window, max_extension=extension))
        streamed["any"].append(detector.is_any_loop_adaptive(window, max_extension=extension))
    assert batched.pattern_diversity(window).tolist() == streamed["diversity"]
    assert batched.state_progressed(window).tolist() == streamed["progressed"]
    windows = batched.adaptive_windows(window, max_extension=extension)
    assert windows.tolist() == streamed["window"]
    flags = batched.any_flags_adaptive(window, max_extension=extension, adaptive=True)
    assert as_list(flags) == streamed["any"]


@settings(max_examples=200, deadline=None)
@given(
    codes=hnp.arrays(np.int64, st.integers(0, 60), elements=st.integers(-2, 4)),
    window=st.integers(2, 70),
)
def test_distinct_in_windows_matches_reference(codes, window):
    got = _distinct_in_windows(codes, window)
    assert got.tolist() == reference_distinct(codes.tolist(), window)


def test_adaptive_windows_pagination_batched(monkeypatch):
    clicks = [{"type": "click", "x": 800, "y": 600}] * 6
    paging = Trajectory.from_actions(clicks, urls=[f"https://x.test/{i}" for i in range(6)])
    assert paging.adaptive_windows(3).tolist() == [3, 3, 5, 5, 5, 5]
    assert not paging.any_flags_adaptive(3).any() and paging.any_flags(3)[2:].all()
    monkeypatch.setenv("MANTIS_LOOP_ADAPTIVE", "off")
    assert paging.any_flags_adaptive(3).tolist() == paging.any_flags(3).tolist()
    assert not paging.any_flags_adaptive(3, adaptive=True).any()


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda t: t.adaptive_windows(1), "window must be an int >= 2"),
        (lambda t: t.adaptive_windows(3, max_extension=-1), "max_extension must be an int >= 0"),
        (lambda t: t.adaptive_windows(3, floor=1), "floor must be an int >= 2"),
        (lambda t: t.any_flags_adaptive(3, adaptive=1), "adaptive must be True, False or None"),
        (lambda t: t.pattern_diversity(1.5), "window must be an int"),
    ],
)
def test_adaptive_windows_bad_input(call, match):
    traj = Trajectory.from_actions([{"type": "wait"}] * 3)
    with pytest.raises(InvalidInputError, match=match):
        call(traj)


def test_adaptive_windows_need_their_codes():
    x = np.zeros(4)
    traj = Trajectory(x, x, [1, 1, 1, 1], 2, [0, 0, 0, 0], None, [0, 0, 0, 0])
    with pytest.raises(InvalidInputError, match="need the trajectory's pattern codes"):
        traj.any_flags_adaptive(2)
    with pytest.raises(InvalidInputError, match="url_id=3"):
        Trajectory(x, x, [1] * 4, 2, [0] * 4, None, [0] * 4, [0] * 4, [0] * 3, [0] * 4)
    full = Trajectory(x, x, [1] * 4, 2, [0] * 4, None, [0] * 4, [0] * 4, [-1] * 4, [5] * 4)
    assert full.state_progressed(2).tolist() == [False] * 4 and not full.pattern.flags.writeable


def test_trajectory_arrays_are_read_only_views():
    x = np.zeros(4)
    traj = Trajectory(x, x, [1, 1, 1, 1], 2, [0, 0, 0, 0], None, [0, 0, 0, 0])
    assert x.flags.writeable and not traj.x.flags.writeable
    assert len(traj) == 4 and traj.tol.tolist() == [2.0] * 4
    assert traj.any_flags(3).tolist() == [False, False, True, True]
    with pytest.raises(ValueError, match="read-only"):
        traj.kind[0] = 2


def test_from_actions_tolerance_and_state_codes(monkeypatch):
    monkeypatch.setenv("MANTIS_ADAPTIVE_CLICK_TOL", "off")
    actions = [{"type": "click", "x": 1, "y": 2, "reasoning": "the link"}, {"type": "wait"}]
    traj = Trajectory.from_actions(actions, frames=["h", None], click_tol_px=9)
    assert traj.tol.tolist() == [9.0, 9.0] and traj.kind.tolist() == [1, 0]
    assert traj.state[0] >= 0 > traj.state[1]
    traj = Trajectory.from_actions(actions, click_tol_px=9, adaptive=True)
    assert traj.tol.tolist() == [4.0, 9.0]


def test_from_actions_url_alone_is_a_state_and_navigation_keys_scroll():
    actions = [{"type": "key", "keys": k} for k in ("Page_Down", "j", "backspace")]
    actions.append({"type": "wait"})
    traj = Trajectory.from_actions(actions, urls=["u", "u", "", ""], frames=[None, "", None, ""])
    assert traj.scroll.tolist() == [True, True, False, True]
    assert traj.state[0] == traj.state[1] >= 0 > traj.state[2]  # the URL alone is a state
    assert traj.state[3] < 0  # neither: nothing known
    assert traj.state_flags(2).tolist() == [False, True, False, False]


# --- bad input ----------------------------------------------------------------------------------

GOOD = {"x": [0.0, 1.0, 2.0], "y": [0.0, 1.0, 2.0], "kind": [1, 1, 1], "tol": 2.0, "window": 2}


@pytest.mark.parametrize(
    ("override", "match"),
    [
        ({"y": [0.0, 1.0]}, r"same length, got x=3, y=2, kind=3"),
        ({"kind": [1, 1]}, r"kind=2"),
        ({"tol": [1.0, 1.0]}, r"tol must be a scalar or hold one value per step \(3\), got 2"),
        ({"window": 1}, "window must be an int >= 2, got 1"),
        ({"window": 0}, "window"),
        ({"window": -4}, "window"),
        ({"window": True}, "window"),
        ({"window": 2.0}, "window"),
        ({"window": "3"}, "window"),
        ({"tol": -0.5}, "tol must be >= 0, got -0.5 at index 0"),
        ({"tol": [1.0, -1.0, 1.0]}, "tol must be >= 0, got -1.0 at index 1"),
        ({"tol": float("nan")}, "tol must be finite"),
        ({"tol": "2"}, "tol must hold real numbers"),
        ({"tol": None}, "tol must hold real numbers"),
        ({"kind": [1, 5, 1]}, "kind: unknown action kind code 5 at index 1"),
        ({"kind": [-1, 1, 1]}, "kind: unknown action kind code -1 at index 0"),
        ({"kind": [1.0, 1.0, 1.0]}, "kind must hold integer codes or action type names"),
        ({"kind": np.array(["click", 3, "drag"], dtype=object)}, "expected action type names"),
        ({"kind": [b"click"] * 3}, "kind must hold"),
        ({"x": [0.0, float("nan"), 2.0]}, "x must be finite, got nan at index 1"),
        ({"y": [0.0, 1.0, float("inf")]}, "y must be finite, got inf at index 2"),
        ({"x": ["0", "1", "2"]}, "x must hold real numbers"),
        ({"x": [True, False, True]}, "x must hold real numbers"),
        ({"x": [[0.0, 1.0, 2.0]]}, r"x must be a 1-D array, got shape \(1, 3\)"),
        ({"x": 3.0}, r"x must be a 1-D array, got shape \(\)"),
        ({"x": [[1.0], [1.0, 2.0]]}, "x must be a 1-D array"),
        ({"x": [1 + 1j, 0, 0]}, "x must hold real numbers"),
    ],
)
def test_drift_bad_input(override, match):
    args = {**GOOD, **override}
    with pytest.raises(ValueError, match=match):
        drift_loop_flags(args["x"], args["y"], args["kind"], args["tol"], args["window"])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: repeat_loop_flags([1, 2], 1), "window"),
        (lambda: repeat_loop_flags([1.0, 2.0], 2), "action_id must hold integer codes"),
        (lambda: repeat_loop_flags([1, 2], 2, scroll=[True]), "same length"),
        (lambda: repeat_loop_flags([1, 2], 2, scroll=[0, 2]), "scroll must be a boolean mask"),
        (lambda: repeat_loop_flags([1, 2], 2, scroll=[0.0, 1.0]), "scroll must be a boolean"),
        (lambda: repeat_loop_flags([1, 2], 2, state=[1, 2, 3]), "state=3"),
        (lambda: repeat_loop_flags([1, 2], 2, state=["a", "b"]), "state must hold integer"),
        (lambda: state_loop_flags([[1, 2]], 2), "state must be a 1-D array"),
        (lambda: state_loop_flags([1, 2], 0), "window"),
        (lambda: state_loop_flags([0.5], 2), "state must hold integer codes"),
        (
            lambda: Trajectory.from_actions([{"type": "wait"}], urls=["a", "b"]),
            "actions=1, urls=2",
        ),
        (lambda: Trajectory.from_actions([{"type": "click", "x": float("nan"), "y": 0}]), "x"),
        (lambda: Trajectory.from_actions([], click_tol_px=-1), "click_tol_px"),
        (lambda: Trajectory.from_actions([], adaptive="on"), "adaptive"),
        (lambda: Trajectory([0.0], [0.0], [1], [1.0], [0, 0], None, [0]), "action_id=2"),
    ],
)
def test_other_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_huge_finite_coordinates_are_valid():
    big = [1e308, 1e308, -1e308, -1e308]  # their sum overflows; each value is finite
    assert as_list(drift_loop_flags(big, [0.0] * 4, [1] * 4, 0, 2)) == [False, True, False, True]
    with pytest.raises(ValueError, match="x must be finite, got inf at index 3"):
        drift_loop_flags([*big[:3], float("inf")], [0.0] * 4, [1] * 4, 0, 2)


def test_empty_and_short_trajectories():
    assert drift_loop_flags([], [], [], 1, 2).shape == (0,)
    assert repeat_loop_flags(np.array([], np.int64), 2).shape == (0,)
    assert state_loop_flags([], 5).shape == (0,)
    assert not drift_loop_flags([1.0], [1.0], [1], 1, 2).any()
    assert len(Trajectory.from_actions([])) == 0


any_array = hnp.arrays(
    dtype=st.one_of(
        hnp.integer_dtypes(),
        hnp.unsigned_integer_dtypes(),
        hnp.floating_dtypes(),
        hnp.boolean_dtypes(),
        hnp.complex_number_dtypes(),
        st.just(np.dtype("U3")),
        st.just(np.dtype(object)),
    ),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6),
)
anything = st.one_of(
    any_array,
    any_array.map(lambda a: a[::2] if a.ndim else a),
    st.none(),
    st.integers(-3, 10),
    st.floats(allow_nan=True),
    st.text(max_size=3),
    st.lists(st.one_of(st.integers(-2, 6), st.floats(), st.text(max_size=2)), max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(x=anything, y=anything, kind=anything, tol=anything, window=anything)
def test_fuzz_only_value_errors(x, y, kind, tol, window):
    for call in (
        lambda: drift_loop_flags(x, y, kind, tol, window),
        lambda: repeat_loop_flags(x, window, scroll=kind, state=y),
        lambda: state_loop_flags(x, window),
    ):
        try:
            flags = call()
        except ValueError:
            continue
        assert flags.dtype == np.bool_ and flags.ndim == 1
        assert len(flags) == len(np.asarray(x))


def test_adaptive_windows_take_numpy_integers_as_the_ints_they_are():
    """A uint8 extension must not wrap in the window arithmetic (250 + 3 > 255)."""
    clicks = [{"type": "click", "x": 800, "y": 600}] * 6
    paging = Trajectory.from_actions(clicks, urls=[f"https://x.test/{i}" for i in range(6)])
    as_int = paging.adaptive_windows(3, max_extension=250, floor=2)
    assert paging.adaptive_windows(3, max_extension=np.uint8(250), floor=np.int8(2)).tolist() == (
        as_int.tolist()
    )
    assert as_int.max() == 253
