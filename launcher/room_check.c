/* SPDX-License-Identifier: MIT */
/*
 * The program of a room's link check (launcher/CMakeLists.txt, ra_room_check):
 * it links every object of one room with the rooms below it only, and runs
 * nothing. A name only a higher room defines is then undefined: the build
 * fails.
 */
int main(void)
{
	return 0;
}
