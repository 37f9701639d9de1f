"""Reads the TensorBoard event files graphshard-trainer writes with --tensorboard DIR, without
TensorFlow or the tensorboard package: TFRecord framing (uint64 length, masked CRC-32C of it,
the Event protobuf, masked CRC-32C of it) and the few Event / Summary fields the trainer writes
(wall_time, step, file_version, summary.value[].tag / simple_value). Every CRC is checked.

    for wall_time, step, tag, value in graphshard.tensorboard.scalars(path): ...
"""
import struct


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc32c(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class CorruptRecord(ValueError):
    pass


def records(path):
    """The payloads of a TFRecord file, each CRC checked (CorruptRecord naming the offset)."""
    with open(path, "rb") as f:
        blob = f.read()
    pos = 0
    while pos < len(blob):
        if len(blob) - pos < 12:
            raise CorruptRecord(f"{path}: {len(blob) - pos} trailing bytes at offset {pos}")
        header = blob[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
        if header_crc != masked_crc32c(header):
            raise CorruptRecord(f"{path}: length CRC mismatch at offset {pos}")
        end = pos + 12 + length + 4
        if end > len(blob):
            raise CorruptRecord(f"{path}: record at offset {pos} runs past the end")
        payload = blob[pos + 12:pos + 12 + length]
        (crc,) = struct.unpack("<I", blob[end - 4:end])
        if crc != masked_crc32c(payload):
            raise CorruptRecord(f"{path}: data CRC mismatch at offset {pos}")
        yield payload
        pos = end


def _varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def _fields(buf):
    """(field number, wire type, value) of a protobuf message: varint -> int, 64-bit -> bytes,
    length-delimited -> bytes, 32-bit -> bytes."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise CorruptRecord(f"unsupported wire type {wire}")
        yield number, wire, value


def events(path):
    """Each Event as a dict: wall_time, step, and file_version or summary [(tag, value)]."""
    for payload in records(path):
        event = {"wall_time": 0.0, "step": 0}
        for number, wire, value in _fields(payload):
            if number == 1 and wire == 1:
                event["wall_time"] = struct.unpack("<d", value)[0]
            elif number == 2 and wire == 0:
                event["step"] = value
            elif number == 3 and wire == 2:
                event["file_version"] = value.decode()
            elif number == 5 and wire == 2:
                summary = []
                for vnum, vwire, v in _fields(value):
                    if vnum != 1 or vwire != 2:
                        continue
                    tag, simple = None, None
                    for fnum, fwire, f in _fields(v):
                        if fnum == 1 and fwire == 2:
                            tag = f.decode()
                        elif fnum == 2 and fwire == 5:
                            simple = struct.unpack("<f", f)[0]
                    summary.append((tag, simple))
                event["summary"] = summary
        yield event


def scalars(path):
    """(wall_time, step, tag, value) of every scalar in the file, in order."""
    for event in events(path):
        for tag, value in event.get("summary", []):
            yield event["wall_time"], event["step"], tag, value
