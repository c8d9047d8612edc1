"""huge-symtab-archive.py OBJECT ARCHIVE: writes ARCHIVE, an ar archive
whose one member is OBJECT (an ELF64 object) with its .symtab's sh_size set
to 2^64 - 112: 7.7e17 entries of 24 bytes, which no file holds (the archive
fuzzer's find). ar and llvm-ar refuse to archive such a member, so the
archive is written here."""
import struct
import sys

obj, out = sys.argv[1], sys.argv[2]
b = bytearray(open(obj, 'rb').read())
shoff, = struct.unpack_from('<Q', b, 0x28)
shentsize, shnum = struct.unpack_from('<HH', b, 0x3a)
patched = 0
for i in range(shnum):
    off = shoff + i * shentsize
    if struct.unpack_from('<I', b, off + 4)[0] == 2:  # SHT_SYMTAB
        struct.pack_into('<Q', b, off + 0x20, 0xffffffffffffff90)
        patched += 1
if patched != 1:
    sys.exit('huge-symtab-archive.py: %s has %d symbol tables, expected 1' % (obj, patched))
name = (obj.rsplit('/', 1)[-1] + '/').encode()
a = bytearray(b'!<arch>\n')
a += (name.ljust(16) + b'0'.ljust(12) + b'0'.ljust(6) + b'0'.ljust(6) +
      b'644'.ljust(8) + str(len(b)).encode().ljust(10) + b'`\n')
a += b + (b'\n' if len(b) % 2 else b'')
open(out, 'wb').write(a)
