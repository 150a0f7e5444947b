/* SPDX-License-Identifier: MIT */
/*
 * The key table's slots and keys, shared by MRs (device.c) and memory
 * windows (mw.c): an index and an 8-bit variant, as a ConnectX mkey.
 */
#include <sys/random.h>
#include "emu/emu_pvt.h"

uint8_t emu_key_variant(void)
{
	static uint32_t fallback = 0x9e3779b9u;
	uint8_t v = 0;

	while (!v) {
		if (getrandom(&v, 1, GRND_NONBLOCK) != 1) {
			/* No entropy yet (early boot): a mix, never a plain count. */
			fallback = fallback * 1103515245u + 12345u;
			v = (uint8_t)(fallback >> 16);
		}
	}
	return v;
}

int emu_key_slot(struct emu_dev *dev, struct emu_mr *m)
{
	unsigned i, n;

	/*
	 * The slots in turn, not the lowest free one: a key is index and an
	 * 8-bit variant, so reusing one slot at once would give a freed key's
	 * index to the next registration, with one chance in 255 of its very
	 * key. In turn, an index comes back only after every slot was used.
	 */
	for (n = 0, i = dev->mr_next % SSQ_EMU_MAX_MR; n < SSQ_EMU_MAX_MR && dev->mrs[i];
	     n++, i = (i + 1) % SSQ_EMU_MAX_MR)
		;
	if (n == SSQ_EMU_MAX_MR)
		return -ENOMEM;
	/*
	 * The variant at random, as mlx5_ib's assign_mkey_variant does not
	 * (a counter, drivers/infiniband/hw/mlx5/mr.c: predictable keys are
	 * ReDMArk's attack, USENIX Security '21); never 0: key 0x100 would be
	 * MLX5_INVALID_LKEY, the receive-list terminator.
	 */
	m->key = (i << 8) | emu_key_variant();
	dev->mrs[i] = m;
	dev->mr_next = i + 1;
	return 0;
}
