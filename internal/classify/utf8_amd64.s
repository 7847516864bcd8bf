//go:build !purego

#include "textflag.h"

// UTF-8 validation 32 bytes at a time (see utf8.go): each byte is checked
// against the three before it with three 16-entry tables, looked up by the
// high and low nibble of the previous byte and the high nibble of the byte
// itself. Each table entry is a set of error bits; a pair of bytes is an
// error when a bit is set in all three lookups, except for the bit that
// marks two continuation bytes in a row, which must be set exactly when the
// byte two or three back leads a 3- or 4-byte sequence.
//
// The error bits:
//   0x01 a lead byte not followed by a continuation byte (too short)
//   0x02 a continuation byte after an ASCII byte (too long)
//   0x04 E0 followed by 80..9F (overlong 3-byte form)
//   0x08 F4 followed by 90..BF, or F5..FF (above U+10FFFF)
//   0x10 ED followed by A0..BF (surrogate)
//   0x20 C0 or C1 (overlong 2-byte form)
//   0x40 F0 followed by 80..8F (overlong 4-byte form), or F5..FF then 80..8F
//   0x80 a continuation byte after a continuation byte

// By the previous byte's high nibble.
DATA prevHigh<>+0(SB)/8, $0x0202020202020202
DATA prevHigh<>+8(SB)/8, $0x4915012180808080
GLOBL prevHigh<>(SB), RODATA|NOPTR, $16

// By the previous byte's low nibble.
DATA prevLow<>+0(SB)/8, $0xCBCBCB8B8383A3E7
DATA prevLow<>+8(SB)/8, $0xCBCBDBCBCBCBCBCB
GLOBL prevLow<>(SB), RODATA|NOPTR, $16

// By the byte's own high nibble.
DATA curHigh<>+0(SB)/8, $0x0101010101010101
DATA curHigh<>+8(SB)/8, $0x01010101BABAAEE6
GLOBL curHigh<>(SB), RODATA|NOPTR, $16

// A block ends inside a sequence when its byte 29 is F0 or above, byte 30
// E0 or above, or byte 31 C0 or above: subtracting these, saturating,
// leaves a nonzero byte exactly then.
DATA incomplete<>+0(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA incomplete<>+8(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA incomplete<>+16(SB)/8, $0xFFFFFFFFFFFFFFFF
DATA incomplete<>+24(SB)/8, $0xBFDFEFFFFFFFFFFF
GLOBL incomplete<>(SB), RODATA|NOPTR, $32

// Bytes broadcast by VPBROADCASTB, one per 8-byte word.
DATA utf8Bytes<>+0(SB)/8, $0x0F  // low nibble
DATA utf8Bytes<>+8(SB)/8, $0x60  // E0 - 80: 3-byte leads reach 80 when this is subtracted
DATA utf8Bytes<>+16(SB)/8, $0x70 // F0 - 80: 4-byte leads likewise
DATA utf8Bytes<>+24(SB)/8, $0x80
GLOBL utf8Bytes<>(SB), RODATA|NOPTR, $32

// CHECK adds to Y8 the errors of the block in Y0, whose previous block is
// in Y7, and leaves in Y6 whether it ends inside a sequence and in Y7 the
// block itself. It uses Y1..Y5.
#define CHECK \
	VPERM2I128 $0x21, Y0, Y7, Y1; \
	VPALIGNR $15, Y1, Y0, Y2; \
	VPALIGNR $14, Y1, Y0, Y3; \
	VPALIGNR $13, Y1, Y0, Y4; \
	VPSRLW $4, Y2, Y1; VPAND Y12, Y1, Y1; VPSHUFB Y1, Y15, Y1; \
	VPAND Y12, Y2, Y5; VPSHUFB Y5, Y14, Y5; VPAND Y5, Y1, Y1; \
	VPSRLW $4, Y0, Y5; VPAND Y12, Y5, Y5; VPSHUFB Y5, Y13, Y5; VPAND Y5, Y1, Y1; \
	VPSUBUSB Y11, Y3, Y3; VPSUBUSB Y10, Y4, Y4; VPOR Y4, Y3, Y3; VPAND Y9, Y3, Y3; \
	VPXOR Y1, Y3, Y3; VPOR Y3, Y8, Y8; \
	VPSUBUSB incomplete<>(SB), Y0, Y6; \
	VMOVDQU Y0, Y7

// func validUTF8AVX2(p *byte, blocks int, tail *[32]byte) bool
TEXT ·validUTF8AVX2(SB), NOSPLIT, $0-25
	MOVQ p+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ tail+16(FP), DX

	VBROADCASTI128 prevHigh<>(SB), Y15
	VBROADCASTI128 prevLow<>(SB), Y14
	VBROADCASTI128 curHigh<>(SB), Y13
	VPBROADCASTB utf8Bytes<>+0(SB), Y12
	VPBROADCASTB utf8Bytes<>+8(SB), Y11
	VPBROADCASTB utf8Bytes<>+16(SB), Y10
	VPBROADCASTB utf8Bytes<>+24(SB), Y9
	VPXOR Y8, Y8, Y8
	VPXOR Y7, Y7, Y7
	VPXOR Y6, Y6, Y6
	TESTQ CX, CX
	JZ   last

loop:
	VMOVDQU (SI), Y0
	VPMOVMSKB Y0, AX
	TESTL AX, AX
	JNZ  full
	// ASCII: only a sequence left open by the previous block is an error.
	VPOR Y6, Y8, Y8
	VPXOR Y6, Y6, Y6
	VMOVDQU Y0, Y7
	JMP  next

full:
	CHECK
	VPTEST Y8, Y8
	JNZ  bad

next:
	ADDQ $32, SI
	DECQ CX
	JNZ  loop

last:
	// The tail is padded with zero bytes, so a sequence still open at the
	// end of the input meets an ASCII byte.
	VMOVDQU (DX), Y0
	CHECK
	VPOR Y6, Y8, Y8
	VPTEST Y8, Y8
	SETEQ ret+24(FP)
	VZEROUPPER
	RET

bad:
	MOVB $0, ret+24(FP)
	VZEROUPPER
	RET
