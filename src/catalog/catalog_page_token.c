/*
 * catalog_page_token.c
 *		Page tokens that name a position without telling it: ListAllTables'.
 *
 * ListAllTables pages through tables in id order, so the next page starts
 * after the last table sent, by its internal number.  Sent as it is, that
 * number tells a caller how many tables were made between two of its pages,
 * those it may not see included.  So the number is sealed: a 16-byte block,
 * the number (8 bytes, big-endian) then a fixed tag (8 bytes), is encrypted
 * with a keyed permutation, a Feistel network of four rounds whose round
 * function is HMAC-SHA256 under the catalog's secret key
 * (lance_catalog.page_token_key, made at install), and sent as 32 hex
 * digits.  Four rounds with a pseudorandom round function make a strong
 * pseudorandom permutation (Luby and Rackoff): tokens of two positions look
 * unrelated, whatever the positions, and no token says anything of another.
 * A position always seals to the same token, so a token stays valid while
 * tables come and go, as paging by key needs.  A token the catalog did not
 * make (changed, made up, from another catalog or from before 0.6.0, when
 * tokens were the numbers themselves) opens to a block whose tag is wrong
 * but with a chance of 2^-64: code 13.
 */
#include "postgres.h"

#include "common/hmac.h"
#include "common/sha2.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "../common/error.h"
#include "catalog.h"
#include "catalog_internal.h"

#define KEY_BYTES	   32
#define HALF_BYTES	   8
#define BLOCK_BYTES	   (2 * HALF_BYTES)
#define FEISTEL_ROUNDS 4

/* the second half of every block the catalog seals: "ListAllTables position, format 1" */
static const uint8 block_tag[HALF_BYTES] = {'l', 'n', 'p', 'o', 's', 0, 0, 1};

static const StatementDef statement_defs[NUM_CATALOG_STATEMENTS] = {
	[STMT_PAGE_TOKEN_KEY] = {"SELECT key FROM lance_catalog.page_token_key", 0, {InvalidOid}},
};

typedef struct TokenCipher
{
	pg_hmac_ctx *hmac;
	uint8 key[KEY_BYTES];
} TokenCipher;

/* Read the catalog's key; the cipher is pg_hmac_free'd by cipher_end. */
static void
cipher_begin(TokenCipher *cipher)
{
	bool isnull;
	bytea *key;

	catalog_execute(STMT_PAGE_TOKEN_KEY, &statement_defs[STMT_PAGE_TOKEN_KEY], NULL, NULL, 1);
	if (SPI_processed != 1)
		ln_error(LN_INTERNAL, "the catalog's page token key is missing");
	key = DatumGetByteaPP(catalog_result_datum(0, 1, &isnull));
	if (isnull || VARSIZE_ANY_EXHDR(key) != KEY_BYTES)
		ln_error(LN_INTERNAL, "the catalog's page token key is damaged");
	memcpy(cipher->key, VARDATA_ANY(key), KEY_BYTES);
	cipher->hmac = pg_hmac_create(PG_SHA256);
	if (cipher->hmac == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
}

static void
cipher_end(TokenCipher *cipher)
{
	pg_hmac_free(cipher->hmac);
	explicit_bzero(cipher->key, sizeof(cipher->key));
}

/* The round function: the first 8 bytes of HMAC-SHA256(key, round || half). */
static void
round_function(TokenCipher *cipher, int round, const uint8 *half, uint8 *out)
{
	uint8 input[1 + HALF_BYTES];
	uint8 digest[PG_SHA256_DIGEST_LENGTH];

	input[0] = (uint8)round;
	memcpy(input + 1, half, HALF_BYTES);
	if (pg_hmac_init(cipher->hmac, cipher->key, KEY_BYTES) < 0 ||
		pg_hmac_update(cipher->hmac, input, sizeof(input)) < 0 ||
		pg_hmac_final(cipher->hmac, digest, sizeof(digest)) < 0)
		elog(ERROR, "could not compute HMAC-SHA256: %s", pg_hmac_error(cipher->hmac));
	memcpy(out, digest, HALF_BYTES);
}

/* (L, R) -> (R, L xor F(R)), round after round. */
static void
encrypt_block(TokenCipher *cipher, uint8 *block)
{
	for (int round = 0; round < FEISTEL_ROUNDS; round++)
	{
		uint8 f[HALF_BYTES];
		uint8 left[HALF_BYTES];

		round_function(cipher, round, block + HALF_BYTES, f);
		memcpy(left, block, HALF_BYTES);
		memcpy(block, block + HALF_BYTES, HALF_BYTES);
		for (int i = 0; i < HALF_BYTES; i++)
			block[HALF_BYTES + i] = left[i] ^ f[i];
	}
}

/* The rounds undone in reverse: (L', R') -> (R' xor F(L'), L'). */
static void
decrypt_block(TokenCipher *cipher, uint8 *block)
{
	for (int round = FEISTEL_ROUNDS - 1; round >= 0; round--)
	{
		uint8 f[HALF_BYTES];
		uint8 right[HALF_BYTES];

		round_function(cipher, round, block, f);
		memcpy(right, block + HALF_BYTES, HALF_BYTES);
		memcpy(block + HALF_BYTES, block, HALF_BYTES);
		for (int i = 0; i < HALF_BYTES; i++)
			block[i] = right[i] ^ f[i];
	}
}

/* The token for position `position` (at least 0): 32 lowercase hex digits. */
char *
catalog_page_token(int64 position)
{
	static const char digits[] = "0123456789abcdef";
	TokenCipher cipher;
	uint8 block[BLOCK_BYTES];
	uint64 value = (uint64)position;
	char *token = palloc(2 * BLOCK_BYTES + 1);

	Assert(position >= 0);
	for (int i = HALF_BYTES - 1; i >= 0; i--, value >>= 8)
		block[i] = (uint8)(value & 0xff);
	memcpy(block + HALF_BYTES, block_tag, HALF_BYTES);
	cipher_begin(&cipher);
	encrypt_block(&cipher, block);
	cipher_end(&cipher);
	for (int i = 0; i < BLOCK_BYTES; i++)
	{
		token[2 * i] = digits[block[i] >> 4];
		token[2 * i + 1] = digits[block[i] & 0xf];
	}
	token[2 * BLOCK_BYTES] = '\0';
	return token;
}

static int
hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * The position a token this catalog made names; false for any other
 * string (which the caller answers with code 13).
 */
bool
catalog_page_token_position(const char *token, int64 *position)
{
	TokenCipher cipher;
	uint8 block[BLOCK_BYTES];
	uint8 differ = 0;
	uint64 value = 0;

	if (strlen(token) != 2 * BLOCK_BYTES)
		return false;
	for (int i = 0; i < BLOCK_BYTES; i++)
	{
		int high = hex_value(token[2 * i]);
		int low = hex_value(token[2 * i + 1]);

		if (high < 0 || low < 0)
			return false;
		block[i] = (uint8)(high << 4 | low);
	}
	cipher_begin(&cipher);
	decrypt_block(&cipher, block);
	cipher_end(&cipher);
	for (int i = 0; i < HALF_BYTES; i++)
		differ |= block[HALF_BYTES + i] ^ block_tag[i];
	for (int i = 0; i < HALF_BYTES; i++)
		value = value << 8 | block[i];
	if (differ != 0 || value > (uint64)PG_INT64_MAX)
		return false;
	*position = (int64)value;
	return true;
}
