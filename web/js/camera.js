// The device camera through getUserMedia (browsers allow it on https and on localhost): a live
// <video>, and one frame captured to a PNG blob.
export class Camera {
  constructor(video) {
    this.video = video;
    this.stream = null;
  }

  static available() {
    return Boolean(window.isSecureContext && navigator.mediaDevices && navigator.mediaDevices.getUserMedia);
  }

  async start() {
    if (!Camera.available()) throw new Error("no camera access in this browser or on this address (it needs https or localhost)");
    if (this.stream) return;
    this.stream = await navigator.mediaDevices.getUserMedia({
      video: { facingMode: "environment", width: { ideal: 640 }, height: { ideal: 480 } },
      audio: false,
    });
    this.video.srcObject = this.stream;
    await this.video.play();
  }

  // The current frame as a PNG blob.
  async capture() {
    const { videoWidth: w, videoHeight: h } = this.video;
    if (!this.stream || !w || !h) throw new Error("the camera is not running");
    const canvas = document.createElement("canvas");
    canvas.width = w;
    canvas.height = h;
    canvas.getContext("2d").drawImage(this.video, 0, 0, w, h);
    const blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
    if (!blob) throw new Error("the frame could not be encoded");
    return blob;
  }

  stop() {
    if (this.stream) for (const track of this.stream.getTracks()) track.stop();
    this.stream = null;
    this.video.srcObject = null;
  }
}
