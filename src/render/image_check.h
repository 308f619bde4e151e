/* SPDX-License-Identifier: Apache-2.0 */
/*
 * image_check.h - the apptainer batch script's check of its image, before
 * anything of the job runs (render.h: FORGE_RENDER_IMAGE_EXIT and the note
 * it leaves, FORGE_RENDER_IMAGE_NOTE). render.c puts it in every apptainer
 * script; enroot-pyxis has none (Pyxis reads its image itself).
 */
#ifndef FORGE_IMAGE_CHECK_H
#define FORGE_IMAGE_CHECK_H

#include "base/buf.h"

/* The check of the image at `image` (the cluster's path, quoted here),
 * appended to s. */
void forge_render_put_image_check(forge_buf_t *s, const char *image);

#endif
