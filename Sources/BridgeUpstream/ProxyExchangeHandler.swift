import BridgeCore
import NIOCore
import NIOHTTP1

/// Reads one HTTP response on the event loop and hands it to async code: the head once, then
/// the body chunk by chunk as the reader asks. The channel runs with `autoRead` off, so a body
/// nobody reads stops the socket instead of filling memory.
final class ProxyExchangeHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart

    // Every member below is touched on the channel's event loop only.
    let head: EventLoopPromise<HTTPResponseHead>
    private var context: ChannelHandlerContext?
    private var chunks = CircularBuffer<ByteBuffer>()
    private var headArrived = false
    private var ended = false
    private var failure: (any Error)?
    private var waiting: EventLoopPromise<ByteBuffer?>?

    init(eventLoop: any EventLoop) {
        head = eventLoop.makePromise()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let responseHead):
            // A 1xx interim response is not the answer; wait for the final one.
            guard responseHead.status.code >= 200 else { return }
            headArrived = true
            head.succeed(responseHead)
        case .body(let buffer):
            if let waiting {
                self.waiting = nil
                waiting.succeed(buffer)
            } else {
                chunks.append(buffer)
            }
        case .end:
            ended = true
            waiting?.succeed(nil)
            waiting = nil
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if !headArrived || (waiting != nil && !ended) { context.read() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !ended { fail(ChannelError.eof) }
        context.fireChannelInactive()
    }

    private func fail(_ error: any Error) {
        guard failure == nil else { return }
        failure = error
        if !headArrived { head.fail(error) }
        waiting?.fail(error)
        waiting = nil
    }

    /// The next body chunk, nil at the end; call on the event loop.
    func next() -> EventLoopFuture<ByteBuffer?> {
        guard let context else { preconditionFailure("the handler is not in a pipeline") }
        if !chunks.isEmpty { return context.eventLoop.makeSucceededFuture(chunks.removeFirst()) }
        if ended { return context.eventLoop.makeSucceededFuture(nil) }
        if let failure { return context.eventLoop.makeFailedFuture(failure) }
        let promise = context.eventLoop.makePromise(of: ByteBuffer?.self)
        waiting = promise
        context.read()
        return promise.futureResult
    }
}
