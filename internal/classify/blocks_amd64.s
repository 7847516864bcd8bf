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

// Signed bounds for VPCMPGTB (memory operands, 32 bytes each): a byte is
// a continuation byte (0x80-0xBF) when not > 0xBF, a two-byte lead
// (0xC2-0xDF) when > 0xC1 and not > 0xDF, as signed bytes.
#define BOUND(name, b) \
	DATA name<>+0(SB)/8, b; DATA name<>+8(SB)/8, b; \
	DATA name<>+16(SB)/8, b; DATA name<>+24(SB)/8, b; \
	GLOBL name<>(SB), RODATA|NOPTR, $32

BOUND(boundBF, $0xBFBFBFBFBFBFBFBF)
BOUND(boundC1, $0xC1C1C1C1C1C1C1C1)
BOUND(boundDF, $0xDFDFDFDFDFDFDFDF)

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
// Bytes that are not continuation bytes (0x80-0xBF).
#define NOTCONT(D, R) VPCMPGTB boundBF<>(SB), D, Y7; VPMOVMSKB Y7, R
// Two-byte leads (0xC2-0xDF).
#define LEAD2(D, R) \
	VPCMPGTB boundC1<>(SB), D, Y7; VPCMPGTB boundDF<>(SB), D, Y8; VPANDN Y7, Y8, Y7; \
	VPMOVMSKB Y7, R

// MASK64 leaves in R the 64-bit mask of class M over the block, using BX.
#define MASK64(M, R) M(Y0, R); M(Y6, BX); SHLQ $32, BX; ORQ BX, R

// The bit arithmetic on a block's masks, shared by both vector passes.
// R12, R13 and R14 hold bs.esc, bs.inStr and bs.scalar from block to
// block; DI points to the block's words in out.

// ESCAPED turns the backslashes in DX into the escaped bytes in AX
// (escaped in blocks.go): b = the backslashes not escaped by the previous
// block, follows = b<<1 | carry, the runs of b starting on an odd bit,
// oddStarts = b &^ even &^ follows; adding them to b carries past each
// run's end; escaped = (even ^ ends<<1) & follows. Uses R8, R9.
#define ESCAPED \
	MOVQ R12, AX; NOTQ AX; ANDQ AX, DX; \
	MOVQ DX, R8; SHLQ $1, R8; ORQ R12, R8; \
	MOVQ $0xAAAAAAAAAAAAAAAA, AX; ANDQ DX, AX; \
	MOVQ R8, R9; NOTQ R9; ANDQ R9, AX; \
	XORL R12, R12; ADDQ DX, AX; SETCS R12B; \
	SHLQ $1, AX; MOVQ $0x5555555555555555, R9; XORQ R9, AX; ANDQ R8, AX

// INSTRING takes the quotes in R9 and the escaped bytes in R8, and leaves
// the unescaped quotes in R10 and the bytes inside strings in R11: the
// prefix XOR of the quotes (a carry-less multiplication by all ones),
// flipped when the block starts inside a string. Uses X7, X8.
#define INSTRING \
	MOVQ R8, AX; NOTQ AX; ANDQ R9, AX; MOVQ AX, R10; \
	VMOVQ AX, X7; VPCMPEQD X8, X8, X8; VPCLMULQDQ $0x00, X8, X7, X7; VMOVQ X7, R11; \
	XORQ R13, R11; MOVQ R11, R13; SARQ $63, R13

// EVENTS takes the whitespace and punctuation in DX, the punctuation in
// R8, the quotes in R9, the unescaped quotes in R10 and the bytes inside
// strings in R11, and writes the block's bytes of numbers and literals
// (outside strings, not whitespace, punctuation or a quote) and its
// events: opening quotes, punctuation outside strings, and the first
// byte of each number or literal.
#define EVENTS \
	ORQ R9, DX; ORQ R11, DX; NOTQ DX; MOVQ DX, 24(DI); \
	MOVQ DX, AX; SHLQ $1, AX; ORQ R14, AX; NOTQ AX; ANDQ DX, AX; \
	SHRQ $63, DX; MOVQ DX, R14; \
	ANDQ R11, R10; NOTQ R11; ANDQ R11, R8; ORQ R10, AX; ORQ R8, AX; MOVQ AX, 0(DI)

// PAIRS clears from the non-ASCII bytes in AX the two-byte sequences
// (pairs in blocks.go), given the continuation bytes in DX and the
// two-byte leads in R8: the leads followed by a continuation byte, and
// those continuation bytes.
#define PAIRS \
	SHRQ $1, DX; ANDQ DX, R8; MOVQ R8, DX; SHLQ $1, DX; ORQ R8, DX; \
	NOTQ DX; ANDQ DX, AX

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
	TESTQ AX, AX
	JZ   ascii
	MASK64(NOTCONT, DX)
	NOTQ DX
	MASK64(LEAD2, R8)
	PAIRS

ascii:
	MOVQ AX, 40(DI)
	MASK64(DIGIT, AX)
	MOVQ AX, 32(DI)

	MASK64(BSLASH, DX)
	MOVQ DX, AX
	ORQ  R12, AX
	JZ   unescaped              // no backslash, none carried in: AX = 0
	ESCAPED

unescaped:
	MOVQ AX, 8(DI)
	MOVQ AX, R8
	MASK64(QUOTE, R9)
	INSTRING
	MASK64(CTRL, AX)
	ANDQ R11, AX
	MOVQ AX, 16(DI)
	MASK64(SPACE, DX)
	MASK64(OP, R8)
	ORQ  R8, DX
	EVENTS

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

// Byte classes by nibble, for VPSHUFB (each 16-byte table repeated in
// the four lanes): a byte's class is hiTable[its high nibble] &
// loTable[its low nibble] (0 for bytes >= 0x80), one bit per rectangle
// of the table of bytes: 0x01 '"', 0x02 '\\', 0x04 ' ', 0x08 '\t' '\n'
// '\r', 0x10 '[' ']' '{' '}', 0x20 ':', 0x40 ',', 0x80 '0'-'9'.
#define NIBBLES(name, lo, hi) \
	DATA name<>+0(SB)/8, lo; DATA name<>+8(SB)/8, hi; \
	DATA name<>+16(SB)/8, lo; DATA name<>+24(SB)/8, hi; \
	DATA name<>+32(SB)/8, lo; DATA name<>+40(SB)/8, hi; \
	DATA name<>+48(SB)/8, lo; DATA name<>+56(SB)/8, hi; \
	GLOBL name<>(SB), RODATA|NOPTR, $64

NIBBLES(hiTable, $0x10001200a0450008, $0)
NIBBLES(loTable, $0x8080808080818084, $0x0000184210288880)

// The class bits VPTESTMB looks for, and the other bytes used, one per
// 8-byte word, broadcast.
DATA classBits<>+0(SB)/8, $0x01 // '"'
DATA classBits<>+8(SB)/8, $0x02 // '\\'
DATA classBits<>+16(SB)/8, $0x7C // whitespace or punctuation
DATA classBits<>+24(SB)/8, $0x70 // punctuation
DATA classBits<>+32(SB)/8, $0x80 // digit
DATA classBits<>+40(SB)/8, $0x0F // low nibble
DATA classBits<>+48(SB)/8, $0x20 // the first byte that is not a control byte
DATA classBits<>+56(SB)/8, $0xC0 // the first byte that is not a continuation byte
DATA classBits<>+64(SB)/8, $0xC2 // the first two-byte lead
DATA classBits<>+72(SB)/8, $0x1E // the number of two-byte leads
GLOBL classBits<>(SB), RODATA|NOPTR, $80

// func blockEventsAVX512(p *byte, blocks int, out *uint64, bs *blockState)
//
// blockEventsAVX2 with AVX-512BW: the whole block in one register, its
// classes from two nibble lookups, its masks in mask registers.
TEXT ·blockEventsAVX512(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ out+16(FP), DI
	MOVQ bs+24(FP), AX
	TESTQ CX, CX
	JZ   done
	MOVQ 0(AX), R12
	MOVQ 8(AX), R13
	MOVQ 16(AX), R14

	VPBROADCASTB classBits<>+0(SB), Z20
	VPBROADCASTB classBits<>+8(SB), Z21
	VPBROADCASTB classBits<>+16(SB), Z22
	VPBROADCASTB classBits<>+24(SB), Z23
	VPBROADCASTB classBits<>+32(SB), Z24
	VPBROADCASTB classBits<>+40(SB), Z17
	VPBROADCASTB classBits<>+48(SB), Z16
	VPBROADCASTB classBits<>+56(SB), Z25
	VPBROADCASTB classBits<>+64(SB), Z26
	VPBROADCASTB classBits<>+72(SB), Z27
	VMOVDQU64 hiTable<>(SB), Z18
	VMOVDQU64 loTable<>(SB), Z19

loop:
	VMOVDQU64 (SI), Z0
	VPMOVB2M Z0, K7             // bytes >= 0x80
	VPCMPUB $1, Z16, Z0, K3     // control bytes
	VPSRLW $4, Z0, Z1
	VPANDQ Z17, Z1, Z1
	VPSHUFB Z1, Z18, Z1
	VPSHUFB Z0, Z19, Z2
	VPANDQ Z1, Z2, Z2           // classes
	VPTESTMB Z20, Z2, K1        // '"'
	VPTESTMB Z21, Z2, K2        // '\\'
	VPTESTMB Z22, Z2, K4        // whitespace or punctuation
	VPTESTMB Z23, Z2, K5        // punctuation
	VPTESTMB Z24, Z2, K6        // digits

	KMOVQ K7, AX
	TESTQ AX, AX
	JZ   ascii
	VPCMPUB $1, Z25, Z0, K7, K0 // continuation bytes
	VPSUBB Z26, Z0, Z3
	VPCMPUB $1, Z27, Z3, K7     // two-byte leads
	KMOVQ K0, DX
	KMOVQ K7, R8
	PAIRS

ascii:
	MOVQ AX, 40(DI)
	KMOVQ K6, AX
	MOVQ AX, 32(DI)
	KMOVQ K2, DX
	MOVQ DX, AX
	ORQ  R12, AX
	JZ   unescaped              // no backslash, none carried in: AX = 0
	ESCAPED

unescaped:
	MOVQ AX, 8(DI)
	MOVQ AX, R8
	KMOVQ K1, R9
	INSTRING
	KMOVQ K3, AX
	ANDQ R11, AX
	MOVQ AX, 16(DI)
	KMOVQ K4, DX
	KMOVQ K5, R8
	EVENTS

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
