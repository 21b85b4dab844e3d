// JPEG through libjpeg-turbo (the library PIL itself uses on Debian, so the pixels agree bit
// for bit). libjpeg reports errors through error_exit, which must not return: ours longjmps
// back into read_jpeg, whose frame holds only trivially destructible locals (see
// png_decode.cpp for why); the decompressor and the pixels are owned by decode_jpeg's frame.
#include <cstdio>  // jpeglib.h needs FILE and size_t first

#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>
#include <cstring>
#include <string>
#include <vector>

#include "image/exif_orientation.h"
#include "image/format_decoders.h"
#include "image/image_error.h"

namespace qmlx::image {
namespace {

// A progressive JPEG may hold any number of scans, each a pass over the whole coefficient
// buffer: thousands of tiny scans make a CPU bomb out of a small file. Real encoders write about
// ten; libjpeg-turbo's own tools suggest refusing past 500.
constexpr int kMaxScans = 500;

struct JpegErrors {
  jpeg_error_mgr manager;  // first: libjpeg's pointer to it is a pointer to us
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = "";
};

[[noreturn]] void on_error_exit(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

// Warnings are not errors (cameras write "extraneous bytes before marker" all the time), except
// the end of data before the image is complete: libjpeg would fill the rest with grey, PIL
// refuses the file as truncated, and so do we.
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) on_error_exit(cinfo);
}

void on_progress(j_common_ptr cinfo) {
  auto* decompress = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (decompress->input_scan_number > kMaxScans) {
    auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
    std::snprintf(errors->message, sizeof errors->message, "more than %d progressive scans",
                  kMaxScans);
    std::longjmp(errors->jump, 1);
  }
}

// CMYK (and YCCK, which libjpeg turns into CMYK) to RGB as PIL does: Adobe's files store the
// inks inverted, and r = (255 - c) * (255 - k) / 255, rounded.
void cmyk_to_rgb(const uint8_t* cmyk, int width, bool inverted, uint8_t* rgb) {
  for (int x = 0; x < width; ++x) {
    const uint8_t* in = cmyk + size_t(x) * 4;
    const unsigned paper_k = inverted ? in[3] : 255u - in[3];
    for (int c = 0; c < 3; ++c) {
      const unsigned paper = inverted ? in[c] : 255u - in[c];
      rgb[size_t(x) * 3 + c] = uint8_t((paper * paper_k + 127) / 255);
    }
  }
}

// The decompressor with our error and progress handlers. Zero-initialised, so destroying it is
// safe whether or not creating it got far.
struct JpegReader {
  jpeg_decompress_struct cinfo{};
  JpegErrors errors;
  jpeg_progress_mgr progress{};
  ~JpegReader() { jpeg_destroy_decompress(&cinfo); }
};

bool read_jpeg(JpegReader* reader, std::span<const uint8_t> bytes, const ImageLimits& limits,
               DecodedFrame* frame, std::vector<uint8_t>* cmyk_row) {
  jpeg_decompress_struct* cinfo = &reader->cinfo;
  JpegErrors* errors = &reader->errors;
  cinfo->err = jpeg_std_error(&errors->manager);
  errors->manager.error_exit = on_error_exit;
  errors->manager.emit_message = on_message;
  if (setjmp(errors->jump)) return false;
  jpeg_create_decompress(cinfo);
  reader->progress.progress_monitor = on_progress;
  cinfo->progress = &reader->progress;
  jpeg_mem_src(cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xFFFF);  // APP1: where EXIF lives
  jpeg_read_header(cinfo, TRUE);
  check_dimensions(cinfo->image_width, cinfo->image_height, limits, "JPEG image");

  for (jpeg_saved_marker_ptr m = cinfo->marker_list; m; m = m->next) {
    if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 &&
        std::memcmp(m->data, "Exif\0\0", 6) == 0) {
      frame->exif_orientation = exif_orientation({m->data, m->data_length});
      break;
    }
  }

  const bool cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
  cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_start_decompress(cinfo);
  if (cinfo->output_components != (cmyk ? 4 : 3)) {
    std::snprintf(errors->message, sizeof errors->message, "unexpected %d output components",
                  cinfo->output_components);
    return false;
  }
  frame->image = RgbImage(int(cinfo->output_width), int(cinfo->output_height));
  if (cmyk) cmyk_row->resize(size_t(cinfo->output_width) * 4);
  while (cinfo->output_scanline < cinfo->output_height) {
    uint8_t* row = frame->image.row(int(cinfo->output_scanline));
    JSAMPROW target = cmyk ? cmyk_row->data() : row;
    jpeg_read_scanlines(cinfo, &target, 1);
    if (cmyk) {
      cmyk_to_rgb(cmyk_row->data(), int(cinfo->output_width), cinfo->saw_Adobe_marker, row);
    }
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

}  // namespace

DecodedFrame decode_jpeg(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  JpegReader reader;
  DecodedFrame frame;
  std::vector<uint8_t> cmyk_row;
  if (!read_jpeg(&reader, bytes, limits, &frame, &cmyk_row)) {
    throw ImageError(ImageErrorReason::kCorrupt,
                     std::string("corrupt JPEG image: ") + reader.errors.message);
  }
  return frame;
}

}  // namespace qmlx::image
