import { type ArgumentsHost, Catch, HttpException } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { acceptsHtml, refusedPage } from './dashboard-assets';
import type { DashboardRequest } from './dashboard.options';

/**
 * On the dashboard's page route only: a browser (Accept: text/html) refused with 401 or 403 gets a
 * short HTML page saying so, instead of raw JSON. Anything else (API clients, other errors) is
 * answered as Nest answers it.
 */
@Catch(HttpException)
export class RefusedPageFilter extends BaseExceptionFilter {
  override catch(exception: HttpException, host: ArgumentsHost): void {
    const status = exception.getStatus();
    const http = host.switchToHttp();
    const request = http.getRequest<DashboardRequest>();
    const adapter = this.httpAdapterHost?.httpAdapter;
    if ((status !== 401 && status !== 403) || !acceptsHtml(request) || !adapter) {
      super.catch(exception, host);
      return;
    }
    const response: unknown = http.getResponse();
    adapter.setHeader(response, 'Content-Type', 'text/html; charset=utf-8');
    adapter.reply(response, refusedPage(status), status);
  }
}
