"""dpverify.records: a record behaves as `dataclass(frozen=True)` with the same options
(construction, defaults and factories, `__post_init__`, equality, hashing, repr,
`replace`, `asdict`, pickling, copying, freezing, inheritance), compiles its `__init__`
only when first instantiated, and refuses at the class statement what it does not
support."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import field
from typing import ClassVar

import pytest

from dpverify.records import record


def _pair(**options):
    """The same class body made by `record(**options)` and by
    `dataclass(frozen=True, **options)`."""

    def body(decorate):
        @decorate
        class Point:
            x: int
            y: tuple = ()
            tags: tuple = field(default_factory=tuple)
            label: str = field(default="p", compare=False)
            hidden: int = field(default=0, repr=False)
            derived: int = field(init=False, default=-1)
            cached: list = field(init=False, default_factory=list, compare=False)

        return Point

    return (body(record(**options) if options else record),
            body(dataclasses.dataclass(frozen=True, **options)))


ARGUMENTS = [((1,), {}), ((1, (2, 3)), {}), ((1,), {"tags": (4,), "label": "q"}),
             ((2, (), (5,), "r", 9), {}), ((1,), {"hidden": 3}), ((1,), {"label": "other"})]


@pytest.mark.parametrize("options", [{}, {"eq": False}, {"repr": False},
                                     {"eq": False, "repr": False}])
def test_a_record_behaves_as_a_frozen_dataclass(options):
    ours, theirs = _pair(**options)
    made = [(ours(*a, **k), theirs(*a, **k)) for a, k in ARGUMENTS]
    for a, b in made:
        assert dataclasses.asdict(a) == dataclasses.asdict(b)
        assert [f.name for f in dataclasses.fields(a)] == [f.name for f in dataclasses.fields(b)]
        if options.get("repr", True):
            assert repr(a).replace("Point", "P") == repr(b).replace("Point", "P")
        else:
            assert repr(a).startswith("<") and repr(b).startswith("<")
        with pytest.raises(dataclasses.FrozenInstanceError):
            a.x = 5
        with pytest.raises(dataclasses.FrozenInstanceError):
            del a.x
        moved = dataclasses.replace(a, x=7)
        assert moved.x == 7 and dataclasses.replace(b, x=7).x == 7
        for clone, other in ((copy.copy(a), copy.copy(b)), (copy.deepcopy(a), copy.deepcopy(b))):
            assert dataclasses.asdict(clone) == dataclasses.asdict(a)
            assert (clone == a) == (other == b)
    for (a1, b1) in made:
        for (a2, b2) in made:
            assert (a1 == a2) == (b1 == b2)
            if (b1 == b2) and options.get("eq", True):
                assert hash(a1) == hash(a2)
    if options.get("eq", True):  # hashes as the dataclass hashes: the compared fields
        a, b = ours(1, (2,), label="z"), theirs(1, (2,), label="z")
        assert hash(a) == hash(b) == hash((1, (2,), (), 0, -1))  # the compared fields
    else:
        a = ours(1)
        assert a != ours(1) and a == a and hash(a) == object.__hash__(a)


@record
class Pickled:
    a: int
    b: tuple = ()


@record(eq=False)
class PickledByIdentity:
    a: int


def test_a_record_survives_pickling_with_its_equality_and_hash():
    """As sent to a batch worker: the copy compares and hashes as the original (a record
    compares by its fields), or by identity where eq=False."""
    original = Pickled(1, (2,))
    copied = pickle.loads(pickle.dumps(original))
    assert copied == original and hash(copied) == hash(original) and copied is not original
    assert repr(copied) == "Pickled(a=1, b=(2,))"
    alone = pickle.loads(pickle.dumps(PickledByIdentity(3)))
    assert alone.a == 3 and alone != PickledByIdentity(3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        copied.a = 2


def test_a_record_hashes_its_compared_fields_as_the_dataclass_does():
    """A list in a compared field makes both unhashable; a field left out of comparison
    (`compare=False`) is left out of the hash by both."""

    def body(decorate):
        @decorate
        class Tagged:
            tags: list
            note: list = field(default_factory=list, compare=False)

        return Tagged

    ours, theirs = body(record), body(dataclasses.dataclass(frozen=True))
    for made in (ours, theirs):
        with pytest.raises(TypeError, match="unhashable"):
            hash(made([1]))
    assert hash(ours((1,), [2])) == hash(theirs((1,), [3])) == hash(((1,),))


def test_post_init_inheritance_and_the_class_check_of_equality():
    @record
    class Base:
        a: int
        b: int = 2

        def __post_init__(self) -> None:
            object.__setattr__(self, "total", self.a + self.b)

    @record
    class Child(Base):
        c: int = 3

        def __post_init__(self) -> None:
            super().__post_init__()
            object.__setattr__(self, "total", self.total + self.c)

    child = Child(1, c=10)
    assert (child.a, child.b, child.c, child.total) == (1, 2, 10, 13)
    assert repr(child) == "test_post_init_inheritance_and_the_class_check_of_equality.<locals>." \
                          "Child(a=1, b=2, c=10)"
    assert Base(1) == Base(1) and Base(1) != Base(2)
    assert Child(1) != Base(1)  # different classes never compare equal, as dataclasses
    assert Base(1).total == 3


def test_the_init_is_compiled_when_the_class_is_first_made():
    @record
    class Later:
        a: int

    stand_in = Later.__dict__["__init__"]
    assert Later(1).a == 1
    compiled = Later.__dict__["__init__"]
    assert compiled is not stand_in  # replaced by the compiled one on the first call
    assert Later(2).a == 2 and Later.__dict__["__init__"] is compiled
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        Later()
    with pytest.raises(TypeError, match="unexpected keyword argument 'b'"):
        Later(1, b=2)


def test_an_undocumented_record_is_named_by_its_parameters_without_inspect(monkeypatch):
    import inspect

    def refused(*args, **kwargs):
        raise AssertionError("inspect.signature called")

    monkeypatch.setattr(inspect, "signature", refused)
    @record
    class Point:
        x: int
        y: tuple = ()
        derived: int = field(init=False, default=-1)

    assert Point.__doc__ == "Point(x, y)"

    @record
    class Documented:
        """Kept."""

        a: int

    assert Documented.__doc__ == "Kept."
    with pytest.raises(AssertionError, match="inspect.signature"):  # the control
        dataclasses.dataclass(frozen=True)(type("Bare", (), {"__annotations__": {"a": int}}))


def test_a_factory_is_called_for_each_instance():
    @record(eq=False)
    class Box:
        items: list = field(default_factory=list)

    first, second = Box(), Box()
    first.items.append(1)
    assert second.items == [] and first.items == [1]
    given = [5]
    assert Box(given).items is given


def test_what_a_record_does_not_take_is_refused_at_the_class_statement():
    """Negative controls: each of these would make an `__init__` or equality unlike the
    dataclass's, so the class statement itself fails."""
    with pytest.raises(TypeError, match="non-default field 'b' follows default field 'a'"):
        @record
        class Order:
            a: int = 1
            b: int

    with pytest.raises(TypeError, match="keyword-only"):
        @record
        class KeywordOnly:
            a: int = field(kw_only=True)

    with pytest.raises(TypeError, match="InitVar"):
        @record
        class WithInitVar:
            a: int
            b: dataclasses.InitVar[int] = 0

    @record
    class WithClassVar:  # a ClassVar is no field, and is taken
        a: int
        b: ClassVar[int] = 3

    assert WithClassVar(1).a == 1 and [f.name for f in dataclasses.fields(WithClassVar)] == ["a"]

    with pytest.raises(TypeError, match="own __eq__"):
        @record
        class OwnEquality:
            a: int

            def __eq__(self, other):
                return True

    with pytest.raises(TypeError, match="own __init__"):
        @record(eq=False)
        class OwnInit:
            a: int

            def __init__(self):
                pass
