#include "textflag.h"

// JSON whitespace by low nibble, for VPSHUFB: entry 0 is ' ', 9 '\t',
// 10 '\n', 13 '\r'; every other entry is 0xFF, which no byte whose low
// nibble is that entry's index and whose high bit is clear can equal (a
// byte with its high bit set looks up 0).
DATA wsTable<>+0(SB)/8, $0xFFFFFFFFFFFFFF20
DATA wsTable<>+8(SB)/8, $0xFFFF0DFFFF0A09FF
DATA wsTable<>+16(SB)/8, $0xFFFFFFFFFFFFFF20
DATA wsTable<>+24(SB)/8, $0xFFFF0DFFFF0A09FF
GLOBL wsTable<>(SB), RODATA|NOPTR, $32

// The bytes the masks compare with, one per 8-byte word, broadcast.
DATA bytes<>+0(SB)/8, $0x22 // '"'
DATA bytes<>+8(SB)/8, $0x5C // '\\'
DATA bytes<>+16(SB)/8, $0x1F // the largest control byte
DATA bytes<>+24(SB)/8, $0x20 // folds '[' ']' onto '{' '}'
DATA bytes<>+32(SB)/8, $0x7B // '{'
DATA bytes<>+40(SB)/8, $0x7D // '}'
DATA bytes<>+48(SB)/8, $0x3A // ':'
DATA bytes<>+56(SB)/8, $0x2C // ','
DATA bytes<>+64(SB)/8, $0x30 // '0'
DATA bytes<>+72(SB)/8, $0x09 // '9' - '0'
GLOBL bytes<>(SB), RODATA|NOPTR, $80

// Each macro below leaves in R the 32-bit mask of one class among the 32
// bytes in D (Y0: the block's first half, Y6: its second half).
#define QUOTE(D, R) VPCMPEQB D, Y1, Y7; VPMOVMSKB Y7, R
#define BSLASH(D, R) VPCMPEQB D, Y2, Y7; VPMOVMSKB Y7, R
#define CTRL(D, R) VPMINUB D, Y3, Y7; VPCMPEQB D, Y7, Y7; VPMOVMSKB Y7, R
#define SPACE(D, R) VPSHUFB D, Y5, Y7; VPCMPEQB D, Y7, Y7; VPMOVMSKB Y7, R
// '{}[]:,' ('[' and ']' are '{' and '}' with bit 5 clear).
#define OP(D, R) \
	VPOR D, Y4, Y7; VPCMPEQB Y7, Y11, Y8; VPCMPEQB Y7, Y12, Y7; VPOR Y8, Y7, Y7; \
	VPCMPEQB D, Y13, Y8; VPOR Y8, Y7, Y7; VPCMPEQB D, Y14, Y8; VPOR Y8, Y7, Y7; \
	VPMOVMSKB Y7, R
// '0'-'9': the bytes that, less '0', are at most 9 as unsigned bytes.
#define DIGIT(D, R) VPSUBB Y9, D, Y7; VPMINUB Y10, Y7, Y8; VPCMPEQB Y7, Y8, Y8; VPMOVMSKB Y8, R
// Bytes >= 0x80.
#define HIGH(D, R) VPMOVMSKB D, R

// MASK64 leaves in R the 64-bit mask of class M over the block, using BX.
#define MASK64(M, R) M(Y0, R); M(Y6, BX); SHLQ $32, BX; ORQ BX, R

// func blockEventsAVX2(p *byte, blocks int, out *uint64, bs *blockState)
//
// The registers that live across blocks: SI the block, DI its words in
// out, CX the blocks left, R12 bs.esc, R13 bs.inStr, R14 bs.scalar.
TEXT ·blockEventsAVX2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ out+16(FP), DI
	MOVQ bs+24(FP), AX
	TESTQ CX, CX
	JZ   done
	MOVQ 0(AX), R12
	MOVQ 8(AX), R13
	MOVQ 16(AX), R14

	VPBROADCASTB bytes<>+0(SB), Y1
	VPBROADCASTB bytes<>+8(SB), Y2
	VPBROADCASTB bytes<>+16(SB), Y3
	VPBROADCASTB bytes<>+24(SB), Y4
	VPBROADCASTB bytes<>+32(SB), Y11
	VPBROADCASTB bytes<>+40(SB), Y12
	VPBROADCASTB bytes<>+48(SB), Y13
	VPBROADCASTB bytes<>+56(SB), Y14
	VPBROADCASTB bytes<>+64(SB), Y9
	VPBROADCASTB bytes<>+72(SB), Y10
	VMOVDQU wsTable<>(SB), Y5

loop:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y6

	MASK64(HIGH, AX)
	MOVQ AX, 40(DI)
	MASK64(DIGIT, AX)
	MOVQ AX, 32(DI)

	// Escaped bytes (escaped in blocks.go): b = backslashes not escaped
	// by the previous block, follows = b<<1 | carry, the runs starting on
	// an odd bit, oddStarts = b &^ even &^ follows; adding them to b
	// carries past each run's end; esc = (even ^ ends<<1) & follows.
	MASK64(BSLASH, DX)
	MOVQ R12, AX
	NOTQ AX
	ANDQ AX, DX                 // b
	MOVQ DX, R8
	SHLQ $1, R8
	ORQ  R12, R8                // follows
	MOVQ $0xAAAAAAAAAAAAAAAA, AX
	ANDQ DX, AX
	MOVQ R8, R9
	NOTQ R9
	ANDQ R9, AX                 // oddStarts
	XORL R12, R12
	ADDQ DX, AX                 // ends
	SETCS R12B                  // the carry into the next block
	SHLQ $1, AX
	MOVQ $0x5555555555555555, R9
	XORQ R9, AX
	ANDQ R8, AX                 // esc
	MOVQ AX, 8(DI)
	MOVQ AX, R8

	// Unescaped quotes, and the bytes inside strings: the prefix XOR of
	// the quotes (a carry-less multiplication by all ones), flipped when
	// the block starts inside a string.
	MASK64(QUOTE, R9)           // every quote
	MOVQ R8, AX
	NOTQ AX
	ANDQ R9, AX
	MOVQ AX, R10                // unescaped quotes
	VMOVQ AX, X7
	VPCMPEQD X8, X8, X8
	VPCLMULQDQ $0x00, X8, X7, X7
	VMOVQ X7, R11
	XORQ R13, R11               // in
	MOVQ R11, R13
	SARQ $63, R13

	// Control bytes inside strings.
	MASK64(CTRL, AX)
	ANDQ R11, AX
	MOVQ AX, 16(DI)

	// Bytes of numbers and literals: outside strings, not whitespace,
	// punctuation or a quote; starts: those that follow none.
	MASK64(SPACE, DX)
	MASK64(OP, R8)
	ORQ  R8, DX
	ORQ  R9, DX
	ORQ  R11, DX
	NOTQ DX                     // scalar
	MOVQ DX, 24(DI)
	MOVQ DX, AX
	SHLQ $1, AX
	ORQ  R14, AX
	NOTQ AX
	ANDQ DX, AX                 // starts
	SHRQ $63, DX
	MOVQ DX, R14

	// Events: opening quotes, punctuation outside strings, starts.
	ANDQ R11, R10
	NOTQ R11
	ANDQ R11, R8
	ORQ  R10, AX
	ORQ  R8, AX
	MOVQ AX, 0(DI)

	ADDQ $64, SI
	ADDQ $48, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER

	MOVQ bs+24(FP), AX
	MOVQ R12, 0(AX)
	MOVQ R13, 8(AX)
	MOVQ R14, 16(AX)

done:
	RET
