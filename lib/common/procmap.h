/* SPDX-License-Identifier: MIT */
/*
 * PROCMAP_QUERY, the ioctl on /proc/PID/maps that describes one mapping
 * (Linux 6.11, include/uapi/linux/fs.h), for headers older than it.
 * The layout is the kernel's ABI: 104 bytes, size first.
 */
#ifndef RA_COMMON_PROCMAP_H
#define RA_COMMON_PROCMAP_H

#include <stdint.h>
#include <sys/ioctl.h>

#include <linux/fs.h>

#ifndef PROCMAP_QUERY
struct procmap_query {
	uint64_t size, query_flags, query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_READABLE 0x01
#endif

/*
 * The kernel's ABI, pinned: uapi/linux/fs.h (Linux 6.11) makes the struct
 * 104 bytes and the request _IOWR('f', 17, ...) = 0xC0686611.
 */
_Static_assert(sizeof(struct procmap_query) == 104, "struct procmap_query is 104 bytes");
_Static_assert(PROCMAP_QUERY == 0xC0686611u, "PROCMAP_QUERY is 0xC0686611");

#endif
