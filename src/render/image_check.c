/* SPDX-License-Identifier: Apache-2.0 */
/*
 * image_check.c - the apptainer batch script's check of its image
 * (image_check.h, render.h): constant shell text after the image's quoted
 * path, no request data in it. It runs as the job's user on the batch
 * node, before the credentials are read and before srun: apptainer's own
 * `sif list` says whether the file opens as a SIF, and the listing's last
 * descriptor byte against the file's size whether it was cut short.
 */
#include "render/image_check.h"
#include "text/shell.h"
#include "render/render.h"

#define TEXT_OF(n)     #n
#define IMAGE_EXIT_(n) TEXT_OF(n)
#define IMAGE_EXIT     IMAGE_EXIT_(FORGE_RENDER_IMAGE_EXIT)

/* The image check (render.h), a constant after `forge_image=<path>`. The
 * first line apptainer prints is its reason ("Error for command "list":
 * invalid SIF magic", "open <path>: no such file or directory"); the
 * descriptors' last byte is the listing's `SIF POSITION (start-end)`. The
 * note names the image once: "<path>: <reason>". */
static const char image_check[] =
    "rm -f -- \"$FORGE_STAGING/" FORGE_RENDER_IMAGE_NOTE "\"\n"
    "forge_why=\n"
    "if ! forge_list=$(apptainer sif list \"$forge_image\" 2>&1); then\n"
    "    forge_why=${forge_list%%$'\\n'*}\n"
    "    forge_why=${forge_why#'Error for command \"list\": '}\n"
    "    forge_why=${forge_why#\"open $forge_image: \"}\n"
    "    forge_why=${forge_why:-apptainer sif list failed}\n"
    "elif ! forge_size=$(stat -L -c %s -- \"$forge_image\" 2>&1); then\n"
    "    forge_why=$forge_size\n"
    "else\n"
    "    forge_end=$(printf '%s\\n' \"$forge_list\" | awk -F'|' "
    "'NF >= 5 { p = $4; gsub(/ /, \"\", p); "
    "if (split(p, r, \"-\") == 2 && r[2] + 0 > m) m = r[2] + 0 } "
    "END { print m + 0 }')\n"
    "    if [ \"$forge_end\" -gt \"$forge_size\" ]; then\n"
    "        forge_why=\"cut short: the file has $forge_size bytes, its SIF "
    "descriptors reach byte $forge_end\"\n"
    "    fi\n"
    "fi\n"
    "if [ -n \"$forge_why\" ]; then\n"
    "    printf '%s: %s\\n' \"$forge_image\" \"$forge_why\" "
    ">\"$FORGE_STAGING/" FORGE_RENDER_IMAGE_NOTE "\"\n"
    "    echo \"forge: image refused: $forge_image: $forge_why\" >&2\n"
    "    exit " IMAGE_EXIT "\n"
    "fi\n"
    "unset forge_image forge_list forge_why forge_size forge_end\n\n";

void forge_render_put_image_check(forge_buf_t *s, const char *image)
{
    forge_buf_puts(s, "# The image, checked before anything of the job runs: "
                      "one apptainer cannot\n# open as a SIF, or one cut "
                      "short, ends the job here (exit " IMAGE_EXIT
                      "), its reason\n# in "
                      "$FORGE_STAGING/" FORGE_RENDER_IMAGE_NOTE " for the "
                      "worker.\nforge_image=");
    forge_shell_quote(s, image);
    forge_buf_putc(s, '\n');
    forge_buf_puts(s, image_check);
}
