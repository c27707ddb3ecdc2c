// The uploaded file of a multipart/form-data body (RFC 7578), as browsers send a form's
// <input type="file"> and `curl -F image=@boot.png` does. Only what /v1/classify needs: find one
// part and hand out its bytes, without copying.
#pragma once

#include <string_view>

#include "accel/common/status.h"

namespace tessera {

// Whether `content_type` is multipart/form-data (any parameters).
bool is_multipart_form(std::string_view content_type);

// The content of the part named `field`, else of the first part that carries a filename; a view
// into `body`. INVALID_ARGUMENT naming what is wrong: no boundary parameter, no closing
// delimiter, a part without a header end, no such part.
Result<std::string_view> multipart_file(std::string_view content_type, std::string_view body,
                                        std::string_view field = "image");

}  // namespace tessera
