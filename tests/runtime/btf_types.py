"""The kernel's BTF read with no help from kq or libbpf (the format of
Documentation/bpf/btf.rst), for tests that check kq's typed dumps against what BTF says a
type holds."""
import struct

INT, PTR, ARRAY, STRUCT, UNION, ENUM, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT = range(1, 12)
FUNC, FUNC_PROTO, VAR, DATASEC, FLOAT, DECL_TAG, TYPE_TAG, ENUM64 = range(12, 20)
QUALIFIERS = (TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG)
INT_SIGNED, INT_CHAR, INT_BOOL = 1, 2, 4


class Type:
    def __init__(self, kind, name, size_or_type, kflag):
        self.kind = kind
        self.name = name
        self.size = size_or_type  # the size, or the type referred to: `ref`
        self.ref = size_or_type
        self.kflag = kflag
        self.members = []  # struct, union: (name, type, bit offset, bitfield bits)
        self.values = []   # enum: (name, value)
        self.encoding = 0  # int
        self.bits = 0      # int
        self.offset = 0    # int's bit offset
        self.elem = 0      # array
        self.nelems = 0    # array


class Btf:
    def __init__(self, path="/sys/kernel/btf/vmlinux"):
        with open(path, "rb") as f:
            data = f.read()
        magic, _version, _flags, hdr_len, type_off, type_len, str_off, str_len = \
            struct.unpack_from("<HBBIIIII", data, 0)
        assert magic == 0xEB9F, f"{path} is not BTF"
        strings = data[hdr_len + str_off:hdr_len + str_off + str_len]
        self.types = [Type(0, "void", 0, False)]
        at, end = hdr_len + type_off, hdr_len + type_off + type_len

        def name(off):
            return strings[off:strings.index(b"\0", off)].decode()

        while at < end:
            name_off, info, size_or_type = struct.unpack_from("<III", data, at)
            at += 12
            kind, vlen, kflag = (info >> 24) & 0x1F, info & 0xFFFF, bool(info >> 31)
            t = Type(kind, name(name_off), size_or_type, kflag)
            if kind == INT:
                (word,) = struct.unpack_from("<I", data, at)
                t.encoding, t.offset, t.bits = (word >> 24) & 0xF, (word >> 16) & 0xFF, word & 0xFF
                at += 4
            elif kind == ARRAY:
                t.elem, _index, t.nelems = struct.unpack_from("<III", data, at)
                at += 12
            elif kind in (STRUCT, UNION):
                for _ in range(vlen):
                    m_name, m_type, m_offset = struct.unpack_from("<III", data, at)
                    at += 12
                    bit, bits = (m_offset & 0xFFFFFF, m_offset >> 24) if kflag else (m_offset, 0)
                    t.members.append((name(m_name), m_type, bit, bits))
            elif kind == ENUM:
                for _ in range(vlen):
                    v_name, value = struct.unpack_from("<Ii", data, at)
                    at += 8
                    t.values.append((name(v_name), value))
            elif kind == ENUM64:
                for _ in range(vlen):
                    v_name, lo, hi = struct.unpack_from("<III", data, at)
                    at += 12
                    t.values.append((name(v_name), hi << 32 | lo))
            elif kind == FUNC_PROTO:
                at += 8 * vlen
            elif kind in (VAR, DECL_TAG):
                at += 4
            elif kind == DATASEC:
                at += 12 * vlen
            self.types.append(t)

    def find(self, kind, name):
        """The id of the first type of `kind` named `name`."""
        for i, t in enumerate(self.types):
            if t.kind == kind and t.name == name:
                return i
        raise KeyError(name)

    def resolved(self, tid):
        while self.types[tid].kind in QUALIFIERS:
            tid = self.types[tid].ref
        return tid

    def size(self, tid):
        t = self.types[self.resolved(tid)]
        if t.kind == PTR:
            return 8
        if t.kind == ARRAY:
            return t.nelems * self.size(t.elem)
        if t.kind in (INT, STRUCT, UNION, ENUM, ENUM64, FLOAT):
            return t.size
        return 0

    def is_char(self, tid):
        t = self.types[self.resolved(tid)]
        return t.kind == INT and t.size == 1 and (t.encoding & INT_CHAR or t.name in ("char", "signed char"))
