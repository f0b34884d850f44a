"""The DDS driver's payload codec: the binding's own CDR for sequence<uint8>, written as one block of bytes.

The real path (Cyclone writers and readers, 8 B to 256 KiB) is the DDS conformance class in
test_conformance.py; these tests pin the wire format and that the fast codec is the one in use.
"""

# No `from __future__ import annotations`: Cyclone's IDL types are resolved from real annotations.
from dataclasses import dataclass

import pytest
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import sequence, uint8

from drivers.dds import ByteSequence, KtMessage, use_byte_sequence


@dataclass
class StockMessage(IdlStruct, typename="kafkatune.test.StockMessage"):
    """The driver's message type left to the binding's own sequence<uint8> machine."""

    data: sequence[uint8]  # type: ignore[type-arg]


@dataclass
class OtherField(IdlStruct, typename="kafkatune.test.OtherField"):
    data: sequence[int]  # type: ignore[type-arg]


def _payload(n: int) -> bytes:
    return bytes(i * 7 % 256 for i in range(n))


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 8, 255, 65536, 1048576])
@pytest.mark.parametrize("xcdr2", [False, True])
def test_byte_sequence_writes_the_bindings_own_cdr_and_reads_bytes(n: int, xcdr2: bool) -> None:
    b = _payload(n)
    ours = KtMessage(data=b).serialize(use_version_2=xcdr2)  # type: ignore[arg-type]
    stock = StockMessage(data=b).serialize(use_version_2=xcdr2)  # type: ignore[arg-type]
    assert ours == stock  # same octets on the wire: other DDS participants read it as before
    back = KtMessage.deserialize(ours).data
    assert type(back) is bytes and back == b
    assert bytes(StockMessage.deserialize(ours).data) == b  # and the binding's reader accepts ours


def test_the_driver_message_type_uses_the_byte_sequence_codec() -> None:
    idl = KtMessage.__idl__
    for machine in (idl.v1_machine, idl.v2_machine):
        assert isinstance(machine.members_machines["data"], ByteSequence)
    stock = StockMessage.__idl__
    stock.populate()  # the binding builds its machines at the first use: whether a test before used it is chance
    assert not isinstance(stock.v2_machine.members_machines["data"], ByteSequence)


def test_a_field_that_is_not_a_byte_sequence_is_refused() -> None:
    with pytest.raises(RuntimeError, match=r"OtherField\.data .* is not the sequence<uint8> machine"):
        use_byte_sequence(OtherField)
