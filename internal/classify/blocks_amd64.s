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

// MASKS leaves in R1..R5 the 32-bit masks of the 32 bytes in D: quote,
// backslash, control byte, whitespace, punctuation ('{}[]:,'; '[' and ']'
// are '{' and '}' with bit 5 clear).
#define MASKS(D, R1, R2, R3, R4, R5) \
	VPCMPEQB D, Y1, Y7; VPMOVMSKB Y7, R1; \
	VPCMPEQB D, Y2, Y7; VPMOVMSKB Y7, R2; \
	VPMINUB D, Y3, Y7; VPCMPEQB D, Y7, Y7; VPMOVMSKB Y7, R3; \
	VPSHUFB D, Y5, Y7; VPCMPEQB D, Y7, Y7; VPMOVMSKB Y7, R4; \
	VPOR D, Y4, Y7; VPCMPEQB Y7, Y11, Y8; VPCMPEQB Y7, Y12, Y7; VPOR Y8, Y7, Y7; \
	VPCMPEQB D, Y13, Y8; VPOR Y8, Y7, Y7; VPCMPEQB D, Y14, Y8; VPOR Y8, Y7, Y7; \
	VPMOVMSKB Y7, R5

// DIGITS leaves in R the 32-bit mask of the digits '0'-'9' among the 32
// bytes in D: those that, less '0', are at most 9 as unsigned bytes.
#define DIGITS(D, R) \
	VPSUBB Y9, D, Y7; VPMINUB Y10, Y7, Y8; VPCMPEQB Y7, Y8, Y8; VPMOVMSKB Y8, R

#define JOIN(lo, hi, off) SHLQ $32, hi; ORQ hi, lo; MOVQ lo, off(DI)

// func blockMasksAVX2(p *byte, blocks int, out *uint64)
TEXT ·blockMasksAVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ out+16(FP), DI
	TESTQ CX, CX
	JZ   done

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
	MASKS(Y0, AX, BX, DX, R8, R9)
	MASKS(Y6, R10, R11, R12, R13, R14)
	JOIN(AX, R10, 0)
	JOIN(BX, R11, 8)
	JOIN(DX, R12, 16)
	JOIN(R8, R13, 24)
	JOIN(R9, R14, 32)
	VPMOVMSKB Y0, AX // bytes >= 0x80
	VPMOVMSKB Y6, BX
	JOIN(AX, BX, 40)
	DIGITS(Y0, AX)
	DIGITS(Y6, BX)
	JOIN(AX, BX, 48)
	ADDQ $64, SI
	ADDQ $56, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER

done:
	RET
